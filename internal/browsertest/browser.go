package browsertest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"sync"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
)

// ErrNoBrowser is returned by Find when no Chromium or Chrome is installed.
var ErrNoBrowser = errors.New("browsertest: no Chromium or Chrome found (install the Debian package chromium, or set CELLROUTER_CHROMIUM)")

// EnvBrowser names the browser binary to use in place of the search.
const EnvBrowser = "CELLROUTER_CHROMIUM"

// Names are the browser binaries Find looks for on the PATH, in order.
var Names = []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"}

// Find returns the path of the browser to drive: $CELLROUTER_CHROMIUM when
// set, else the first of Names on the PATH.
func Find() (string, error) {
	if p := os.Getenv(EnvBrowser); p != "" {
		path, err := exec.LookPath(p)
		if err != nil {
			return "", fmt.Errorf("browsertest: %s=%q: %w", EnvBrowser, p, err)
		}
		return path, nil
	}
	for _, n := range Names {
		if path, err := exec.LookPath(n); err == nil {
			return path, nil
		}
	}
	return "", ErrNoBrowser
}

// Browser is a running headless browser. Close stops it.
type Browser struct {
	alloc    context.Context
	stop     context.CancelFunc // ends the allocator: kills the process and waits
	root     context.Context    // the browser's first tab, which owns the process
	rootStop context.CancelFunc
}

// Start launches the browser at path, headless, in a window of width by
// height pixels, and waits until it answers.
func Start(path string, width, height int) (*Browser, error) {
	opts := append(slices.Clone(chromedp.DefaultExecAllocatorOptions[:]), chromedp.ExecPath(path),
		chromedp.WindowSize(width, height), chromedp.DisableGPU, chromedp.Flag("disable-dev-shm-usage", true))
	if os.Geteuid() == 0 {
		// Chromium's sandbox refuses to run as root, as in most containers.
		opts = append(opts, chromedp.NoSandbox)
	}
	b := &Browser{}
	b.alloc, b.stop = chromedp.NewExecAllocator(context.Background(), opts...)
	b.root, b.rootStop = chromedp.NewContext(b.alloc)
	// The first run starts the process; it must not carry a timeout,
	// which would end the browser with it.
	if err := chromedp.Do(b.root); err != nil {
		b.Close()
		return nil, fmt.Errorf("browsertest: start %s: %w", path, err)
	}
	return b, nil
}

// Close stops the browser and waits for its process to exit.
func (b *Browser) Close() {
	b.rootStop()
	b.stop()
}

// Tab is one browser tab that records its console. Its methods must not be
// called concurrently.
type Tab struct {
	ctx    context.Context
	cancel context.CancelFunc
	done   chan struct{} // closed when the console reader returns

	mu   sync.Mutex
	msgs []chromedp.ConsoleMessage
}

// NewTab opens a tab that sends headers (such as Authorization) with
// every request it makes, and starts recording its console.
func (b *Browser) NewTab(headers map[string]string) (*Tab, error) {
	ctx, cancel := chromedp.NewContext(b.root)
	t := &Tab{ctx: ctx, cancel: cancel, done: make(chan struct{})}
	if err := chromedp.Do(ctx); err != nil { // opens the tab
		cancel()
		return nil, fmt.Errorf("browsertest: new tab: %w", err)
	}
	msgs := chromedp.Console(ctx) // subscribed now, before any page loads
	go func() {
		defer close(t.done)
		for m, err := range msgs {
			if err != nil {
				return
			}
			t.mu.Lock()
			t.msgs = append(t.msgs, m)
			t.mu.Unlock()
		}
	}()
	if len(headers) > 0 {
		h := network.Headers{}
		for k, v := range headers {
			h[k] = v
		}
		if err := chromedp.Do(ctx, chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
			if _, err := cdp.Call(ctx, tg, network.Enable, network.EnableParams{}); err != nil {
				return err
			}
			_, err := cdp.Call(ctx, tg, network.SetExtraHTTPHeaders, network.SetExtraHTTPHeadersParams{Headers: h})
			return err
		})); err != nil {
			t.Close()
			return nil, fmt.Errorf("browsertest: headers: %w", err)
		}
	}
	return t, nil
}

// Close closes the tab and waits for its console reader.
func (t *Tab) Close() {
	t.cancel()
	<-t.done
}

// within runs f with a timeout derived from the tab's context.
func (t *Tab) within(d time.Duration, f func(ctx context.Context) error) error {
	ctx, cancel := context.WithTimeout(t.ctx, d)
	defer cancel()
	return f(ctx)
}

// Navigate loads url and waits for the page to load.
func (t *Tab) Navigate(url string) error {
	return t.within(time.Minute, func(ctx context.Context) error { return chromedp.Do(ctx, chromedp.Navigate(url)) })
}

// Texts returns the text of every element the CSS selector matches, in
// document order (none: an empty slice).
func (t *Tab) Texts(selector string) ([]string, error) {
	var out []string
	err := t.within(30*time.Second, func(ctx context.Context) error {
		var err error
		out, err = chromedp.Run(ctx, chromedp.Evaluate[[]string](
			fmt.Sprintf(`Array.from(document.querySelectorAll(%q), e => e.textContent.trim())`, selector)))
		return err
	})
	return out, err
}

// Eval evaluates a JavaScript expression through the DevTools protocol
// (not as a page script, so the page's policy does not apply) and returns
// its value as a string.
func (t *Tab) Eval(expr string) (string, error) {
	var out string
	err := t.within(30*time.Second, func(ctx context.Context) error {
		var err error
		out, err = chromedp.Run(ctx, chromedp.Evaluate[string]("String("+expr+")"))
		return err
	})
	return out, err
}

// Screenshot returns a PNG of the whole page.
func (t *Tab) Screenshot() ([]byte, error) {
	var png []byte
	err := t.within(time.Minute, func(ctx context.Context) error {
		var err error
		png, err = chromedp.Run(ctx, chromedp.FullScreenshot(100))
		return err
	})
	return png, err
}

// Console returns what the tab's console and the browser's log reported
// so far.
func (t *Tab) Console() []chromedp.ConsoleMessage {
	t.mu.Lock()
	defer t.mu.Unlock()
	return slices.Clone(t.msgs)
}

// Problems returns the errors and warnings among Console: console.error
// and console.warn calls, uncaught exceptions, and the browser's own error
// and warning entries, where it reports Content-Security-Policy
// violations and failed loads.
func (t *Tab) Problems() []chromedp.ConsoleMessage {
	var out []chromedp.ConsoleMessage
	for _, m := range t.Console() {
		switch m.Type {
		case chromedp.ConsoleError, chromedp.ConsoleWarning, chromedp.ConsoleException, "assert":
			out = append(out, m)
		}
	}
	return out
}

// Package browsertest drives a real, headless Chromium (through the
// DevTools protocol, github.com/chromedp/chromedp) for tests of what the
// daemons serve to browsers: their status pages.
//
// Find locates the browser (CELLROUTER_CHROMIUM, else chromium,
// chromium-browser, google-chrome or google-chrome-stable on the PATH);
// tests skip, saying why, when there is none. Start launches it (with
// --no-sandbox when running as root, as in containers), and each Tab
// records everything the page's console and the browser's log report,
// Content-Security-Policy violations included, so a test can require a
// page that loads without one. Close stops the browser and waits for its
// process.
//
// The package's tests start a real demo fleet (loadtest/fleet: globald,
// two cells, simulated vLLM pods), send it requests, and load both
// daemons' /status pages: the real cells' and pods' names must be
// rendered, the console must stay clean, the pages must reload
// themselves, and screenshots are written to the test's temporary
// directory, or, with CELLROUTER_UPDATE_SCREENSHOTS=1, to
// docs/status-globald.png and docs/status-celld.png for the README.
package browsertest

package statuspage

import (
	"bytes"
	"errors"
	"log/slog"
	"net/http"
	"time"

	"github.com/cellrouter/cellrouter/api/openai"
)

// ErrNoContent is returned by New for a content template that does not
// define "content".
var ErrNoContent = errors.New(`statuspage: the content template defines no "content"`)

// MaxDecisions is how many recent decisions a page lists at most.
const MaxDecisions = 50

// Handler serves one daemon's status page at GET /status. Put it behind
// the daemon's control-plane guard: the page shows no key, but it shows
// the fleet. It is safe for concurrent use once built.
type Handler struct {
	// Config is the page's refresh and trace links.
	Config Config
	// Template is the daemon's page.
	Template *Template
	// Tier is "cell" or "global": the decisions' explanations are under
	// /v1/<Tier>/decisions/; Target heads their target column.
	Tier, Target string
	// Title heads the page.
	Title string
	// Version is the build's version.
	Version string
	// Body returns the daemon's data for its content template, built
	// afresh for each request at now (the page's clock).
	Body func(now time.Time) (any, error)
	// Decisions returns the recent decisions, newest first; nil: the
	// daemon keeps none, and the page says so.
	Decisions func() []Decision
	// Now is the page's clock; nil means time.Now.
	Now func() time.Time
	// Log receives rendering failures; nil means slog.Default().
	Log *slog.Logger
}

// SetHeaders sets the headers every status page is served with: the
// Content-Security-Policy, no sniffing, no caching, no framing, no
// referrer (the page's links leave no trace of it).
func SetHeaders(h http.Header) {
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Content-Security-Policy", ContentSecurityPolicy)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "no-referrer")
}

// ServeHTTP renders the page. A failure is a 500 in OpenAI's error shape
// whose message names nothing internal (the log has the details).
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	now := time.Now()
	if h.Now != nil {
		now = h.Now()
	}
	body, err := h.Body(now)
	var buf bytes.Buffer
	if err == nil {
		err = h.Template.Render(&buf, &Page{
			Title: h.Title, Now: now, RefreshSeconds: int(h.Config.Refresh / time.Second), Version: h.Version, Body: body,
			Decisions: decisionsView(h.Config, h.Tier, h.Target, now, h.Decisions, MaxDecisions),
		})
	}
	if err != nil {
		log := h.Log
		if log == nil {
			log = slog.Default()
		}
		log.Error("statuspage: cannot render the status page", "err", err)
		openai.WriteErrorBody(w, http.StatusInternalServerError, openai.NewErrorBody(openai.TypeServer,
			"the status page could not be rendered", "", "internal_error"))
		return
	}
	SetHeaders(w.Header())
	w.WriteHeader(http.StatusOK)
	if r.Method != http.MethodHead {
		_, _ = w.Write(buf.Bytes())
	}
}

package servers

import (
	"bytes"
	"net/http"

	"github.com/cellrouter/cellrouter/api/openai"
)

// OpenAIErrors returns a handler that serves mux, answering the requests
// that match none of its patterns in OpenAI's error shape instead of Go's
// plain text: 404 (code "not_found") for a path it does not serve, and 405
// (code "method_not_allowed", with the Allow header mux computed) for a
// path it serves with other methods. Redirects (a path to clean, a missing
// trailing slash) pass through as mux writes them.
//
// A matched request costs one extra pattern lookup: mux.Handler finds the
// pattern, then mux.ServeHTTP serves it (which sets r.Pattern and the path
// values the handlers read).
func OpenAIErrors(mux *http.ServeMux) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h, pattern := mux.Handler(r)
		if pattern != "" {
			mux.ServeHTTP(w, r)
			return
		}
		// No pattern: h is the mux's 404 or 405 answer or a redirect to a
		// cleaned path. Let it write to a recorder, then answer.
		rec := &recorder{header: http.Header{}}
		h.ServeHTTP(rec, r)
		switch rec.status {
		case http.StatusNotFound:
			openai.WriteNotFound(w, r)
		case http.StatusMethodNotAllowed:
			openai.WriteMethodNotAllowed(w, r, rec.header.Get("Allow"))
		default:
			for k, vv := range rec.header {
				w.Header()[k] = vv
			}
			w.WriteHeader(rec.status)
			_, _ = w.Write(rec.body.Bytes())
		}
	})
}

// recorder is the http.ResponseWriter OpenAIErrors gives the mux's own
// answers: they are short, so it keeps them whole.
type recorder struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (r *recorder) Header() http.Header { return r.header }

func (r *recorder) WriteHeader(status int) {
	if r.status == 0 {
		r.status = status
	}
}

func (r *recorder) Write(p []byte) (int, error) {
	r.WriteHeader(http.StatusOK)
	return r.body.Write(p)
}

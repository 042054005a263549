package cell

import (
	"crypto/tls"
	"testing"
	"time"

	"github.com/cellrouter/cellrouter/internal/servers/servertest"
	"github.com/cellrouter/cellrouter/internal/tlsconf"
	"github.com/cellrouter/cellrouter/internal/tlsconf/tlstest"
)

// TestCellServerRefusalsAnswerInOpenAIShape sends the cell's HTTP server,
// plain and over TLS, the raw requests net/http refuses before any
// handler runs (a 1 MiB header, HTTP/1.1 without Host, a head cut off)
// and checks each is answered in OpenAI's error shape; an HTTP/1.0
// request without Host is served.
func TestCellServerRefusalsAnswerInOpenAIShape(t *testing.T) {
	for _, secure := range []bool{false, true} {
		cfg := testConfig()
		cfg.Limits.ReadHeaderTimeout = 500 * time.Millisecond
		var client *tls.Config
		if secure {
			ca, dir := tlstest.NewCA(t, "tier"), t.TempDir()
			cfg.TLS.Config = ca.Files(t, dir, "cell", tlstest.Options{})
			src, err := tlsconf.NewSource(ca.Files(t, dir, "globald", tlstest.Options{}))
			if err != nil {
				t.Fatal(err)
			}
			client = src.ClientConfig()
		}
		c := startCell(t, cfg)
		for _, rr := range servertest.RawRefusals {
			status, hdr, body := servertest.Raw(t, c.HTTPAddr(), client, rr.Raw)
			if status != rr.Status || hdr.Get("Content-Type") != "application/json" {
				t.Errorf("tls=%v %s: got %d %q %s, want %d in OpenAI's shape", secure, rr.Name, status, hdr.Get("Content-Type"), body, rr.Status)
				continue
			}
			servertest.ErrorBody(t, body)
		}
		status, _, body := servertest.Raw(t, c.HTTPAddr(), client, "GET /healthz HTTP/1.0\r\n\r\n")
		if status != 200 {
			t.Errorf("tls=%v HTTP/1.0 without Host: got %d %s, want 200", secure, status, body)
		}
	}
}

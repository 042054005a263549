package global

import (
	"crypto/tls"
	"testing"
	"time"

	"github.com/cellrouter/cellrouter/internal/servers/servertest"
)

// TestGlobalServerRefusalsAnswerInOpenAIShape sends globald's HTTP server,
// plain and over TLS (ServeTLS), the raw requests net/http refuses before
// any handler runs (a 1 MiB header, HTTP/1.1 without Host, a head cut
// off) and checks each is answered in OpenAI's error shape; an HTTP/1.0
// request without Host is served.
func TestGlobalServerRefusalsAnswerInOpenAIShape(t *testing.T) {
	for _, secure := range []bool{false, true} {
		var addr string
		var client *tls.Config
		if secure {
			s := startSecureTier(t, func(c *Config) {
				c.Security.ServeTLS = true
				c.Limits.ReadHeaderTimeout = 500 * time.Millisecond
			})
			addr = s.g.HTTPAddr()
			client = &tls.Config{InsecureSkipVerify: true, NextProtos: []string{"http/1.1"}}
		} else {
			addr = startGlobalWith(t, &mutableDir{}, func(c *Config) { c.Limits.ReadHeaderTimeout = 500 * time.Millisecond }).HTTPAddr()
		}
		for _, rr := range servertest.RawRefusals {
			status, hdr, body := servertest.Raw(t, addr, client, rr.Raw)
			if status != rr.Status || hdr.Get("Content-Type") != "application/json" {
				t.Errorf("tls=%v %s: got %d %q %s, want %d in OpenAI's shape", secure, rr.Name, status, hdr.Get("Content-Type"), body, rr.Status)
				continue
			}
			servertest.ErrorBody(t, body)
		}
		status, _, body := servertest.Raw(t, addr, client, "GET /healthz HTTP/1.0\r\n\r\n")
		if status != 200 {
			t.Errorf("tls=%v HTTP/1.0 without Host: got %d %s, want 200", secure, status, body)
		}
	}
}

package proxy

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"testing"

	"github.com/cellrouter/cellrouter/internal/tlsconf"
	"github.com/cellrouter/cellrouter/internal/tlsconf/tlstest"
)

// TestForwardTLS relays to a pod that serves HTTPS and asks for client
// certificates: a proxy with the pod's CA and a certificate reaches it, one
// without a certificate does not.
func TestForwardTLS(t *testing.T) {
	dir := t.TempDir()
	ca := tlstest.NewCA(t, "pods")
	podSrc, err := tlsconf.NewSource(ca.Files(t, dir, "pod", tlstest.Options{}))
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	pod := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/models" {
			fmt.Fprint(w, `{"object":"list","data":[{"id":"m1","object":"model"}]}`)
			return
		}
		fmt.Fprintf(w, `{"tls":%v}`, r.TLS != nil && tlsconf.VerifiedPeer(r.TLS))
	}), ErrorLog: log.New(io.Discard, "", 0)}
	go pod.Serve(tls.NewListener(l, podSrc.ServerConfig("http/1.1")))
	t.Cleanup(func() { pod.Close() })
	target := Target{Pod: "p", Address: l.Addr().String()}

	for _, tc := range []struct {
		name       string
		files      tlsconf.Config
		wantStatus int
		wantBody   string
	}{
		{"client certificate", ca.Files(t, dir, "cell", tlstest.Options{}), 200, `{"tls":true}`},
		{"no client certificate", tlsconf.Config{CAFile: ca.Files(t, dir, "x", tlstest.Options{}).CAFile}, 502, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src, err := tlsconf.NewSource(tc.files)
			if err != nil {
				t.Fatal(err)
			}
			cfg := DefaultConfig()
			cfg.TLS = src.ClientConfig()
			p := testProxy(t, cfg)
			f := newFront(t, func(w http.ResponseWriter, r *http.Request, body []byte) error {
				return p.Forward(w, r, body, []Target{target}, Hooks{})
			})
			resp, err := post(context.Background(), f.URL+"/v1/completions", `{"prompt":"x"}`, nil)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			f.nextErr(t)
			if resp.StatusCode != tc.wantStatus || (tc.wantBody != "" && string(b) != tc.wantBody) {
				t.Fatalf("got %d %s, want %d %s", resp.StatusCode, b, tc.wantStatus, tc.wantBody)
			}
			if tc.wantStatus == 200 {
				list, err := p.Models(context.Background(), target)
				if _, ok := list.Find("m1"); err != nil || !ok {
					t.Errorf("Models: %+v, %v; want m1", list, err)
				}
			}
		})
	}
}

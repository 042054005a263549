package edge

import (
	"bufio"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"io"
	"math/big"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// selfSigned returns a server TLS configuration with a certificate for
// 127.0.0.1 made for the test.
func selfSigned(t *testing.T) *tls.Config {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "edge-test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key}},
		NextProtos: []string{"http/1.1"}}
}

// tlsSeen answers 200 with whether the request came over TLS, which tells
// that Request.TLS survives WrapListener's TLS.
var tlsSeen = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	if r.TLS != nil && r.TLS.HandshakeComplete {
		w.Header().Set("X-TLS", "yes")
	}
	io.WriteString(w, "ok")
})

// served serves tlsSeen like hardened, over TLS when cfg is set.
func served(t *testing.T, l Limits, cfg *tls.Config) (string, *Metrics) {
	t.Helper()
	m := NewMetrics(prometheus.NewRegistry())
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := NewHTTPServer(Harden(l, m, tlsSeen), l, nil)
	go srv.Serve(WrapListener(lis, l, m, cfg))
	t.Cleanup(func() { srv.Close() })
	return lis.Addr().String(), m
}

// rawExchange sends raw on a new connection (TLS when secure) and reads
// one response; the send runs beside the read, as a client pushing a
// megabyte of headers would.
func rawExchange(t *testing.T, addr string, secure bool, raw string) *http.Response {
	t.Helper()
	var c net.Conn
	var err error
	if secure {
		c, err = tls.Dial("tcp", addr, &tls.Config{InsecureSkipVerify: true, NextProtos: []string{"http/1.1"}})
	} else {
		c, err = net.Dial("tcp", addr)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	go io.WriteString(c, raw)
	c.SetReadDeadline(time.Now().Add(30 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("reading the answer to %.40q: %v", raw, err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

// TestServerRefusalsAreOpenAIShaped sends, over plain TCP and over TLS,
// the requests net/http refuses before any handler runs, and checks each
// answer is OpenAI's error shape with the right status and code.
func TestServerRefusalsAreOpenAIShaped(t *testing.T) {
	bigHeader := "GET /v1/models HTTP/1.1\r\nHost: x\r\nX-Big: " + strings.Repeat("a", 1<<20) + "\r\n\r\n"
	cases := []struct {
		name, raw string
		status    int
		code      string
		limit     string // the limit hit counted, if any
	}{
		{"1 MB header", bigHeader, 431, "headers_too_large", LimitHeaderSize},
		{"HTTP/1.1 without Host", "GET /v1/models HTTP/1.1\r\n\r\n", 400, "bad_request", ""},
		{"malformed request line", "GET\r\n\r\n", 400, "bad_request", ""},
		{"bad Transfer-Encoding", "POST /v1/models HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip\r\n\r\n", 501, "not_implemented", ""},
		{"slow request line", "GET /v1/mod", 408, "request_timeout", LimitHeaderTimeout},
		{"slow headers", "GET /v1/models HTTP/1.1\r\nHost: x\r\nX-A: b\r\n", 408, "request_timeout", LimitHeaderTimeout},
	}
	for _, secure := range []bool{false, true} {
		var cfg *tls.Config
		if secure {
			cfg = selfSigned(t)
		}
		for _, tc := range cases {
			t.Run(map[bool]string{false: "plain/", true: "tls/"}[secure]+tc.name, func(t *testing.T) {
				addr, m := served(t, testLimits(), cfg)
				resp := rawExchange(t, addr, secure, tc.raw)
				body, _ := io.ReadAll(resp.Body)
				if resp.StatusCode != tc.status {
					t.Fatalf("status: got %d, want %d (body %q)", resp.StatusCode, tc.status, body)
				}
				if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
					t.Errorf("Content-Type: got %q, want application/json", ct)
				}
				d := errorOf(t, string(body))
				if got := codeOf(d); got != tc.code {
					t.Errorf("code: got %q, want %q (message %q)", got, tc.code, d.Message)
				}
				if tc.name == "HTTP/1.1 without Host" && !strings.Contains(d.Message, "Host") {
					t.Errorf("message %q does not name the missing Host header", d.Message)
				}
				if tc.limit != "" {
					waitCounter(t, tc.limit+" hits", m.limitHits.WithLabelValues(tc.limit), 1)
				}
			})
		}
	}
}

// TestServerAcceptsHostlessHTTP10 checks an HTTP/1.0 request without Host
// reaches the handler, and that over TLS the handler sees the TLS state.
func TestServerAcceptsHostlessHTTP10(t *testing.T) {
	for _, secure := range []bool{false, true} {
		var cfg *tls.Config
		if secure {
			cfg = selfSigned(t)
		}
		addr, _ := served(t, testLimits(), cfg)
		resp := rawExchange(t, addr, secure, "GET /v1/models HTTP/1.0\r\n\r\n")
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 200 || string(body) != "ok" {
			t.Fatalf("tls=%v: got %d %q, want 200 \"ok\"", secure, resp.StatusCode, body)
		}
		if got := resp.Header.Get("X-TLS") == "yes"; got != secure {
			t.Errorf("tls=%v: handler saw Request.TLS: %v", secure, got)
		}
	}
}

// TestServerRefusalAfterKeepAlive checks that a refusal on a kept-alive
// connection, after a request a handler answered, is still recognised and
// that the handler's own answers pass unchanged.
func TestServerRefusalAfterKeepAlive(t *testing.T) {
	for _, secure := range []bool{false, true} {
		var cfg *tls.Config
		if secure {
			cfg = selfSigned(t)
		}
		addr, _ := served(t, testLimits(), cfg)
		var c net.Conn
		var err error
		if secure {
			c, err = tls.Dial("tcp", addr, &tls.Config{InsecureSkipVerify: true})
		} else {
			c, err = net.Dial("tcp", addr)
		}
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(30 * time.Second))
		br := bufio.NewReader(c)
		io.WriteString(c, "GET /v1/models HTTP/1.1\r\nHost: x\r\n\r\n")
		resp, err := http.ReadResponse(br, nil)
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("tls=%v: first request: %v %v", secure, resp, err)
		}
		if body, _ := io.ReadAll(resp.Body); string(body) != "ok" {
			t.Fatalf("tls=%v: first body %q, want \"ok\"", secure, body)
		}
		io.WriteString(c, "GET /v1/models HTTP/1.1\r\n\r\n")
		resp, err = http.ReadResponse(br, nil)
		if err != nil || resp.StatusCode != 400 {
			t.Fatalf("tls=%v: second request: %v %v", secure, resp, err)
		}
		body, _ := io.ReadAll(resp.Body)
		errorOf(t, string(body))
	}
}

// TestPlainHTTPToTLSServer checks a client speaking plain HTTP to the TLS
// listener is told so in OpenAI's shape.
func TestPlainHTTPToTLSServer(t *testing.T) {
	addr, _ := served(t, testLimits(), selfSigned(t))
	resp := rawExchange(t, addr, false, "GET /v1/models HTTP/1.1\r\nHost: x\r\n\r\n")
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 400 {
		t.Fatalf("status: got %d, want 400", resp.StatusCode)
	}
	if d := errorOf(t, string(body)); !strings.Contains(d.Message, "HTTPS") {
		t.Errorf("message %q does not say the server speaks HTTPS", d.Message)
	}
}

// TestStatusLine checks the parse of the server's status lines.
func TestStatusLine(t *testing.T) {
	cases := []struct {
		in     string
		status int
		reason string
		ok     bool
	}{
		{"HTTP/1.1 400 Bad Request: missing required Host header\r\nX: y\r\n\r\n", 400, "missing required Host header", true},
		{"HTTP/1.1 431 Request Header Fields Too Large\r\n", 431, "", true},
		{"HTTP/1.0 417 Expectation Failed\r\n", 417, "", true},
		{"HTTP/1.1 4x0 Bad\r\n", 0, "", false},
		{"{\"id\":1}", 0, "", false},
		{"HTTP/1.1 40", 0, "", false},
	}
	for _, tc := range cases {
		st, r, ok := statusLine([]byte(tc.in))
		if st != tc.status || r != tc.reason || ok != tc.ok {
			t.Errorf("statusLine(%q): got %d %q %v, want %d %q %v", tc.in, st, r, ok, tc.status, tc.reason, tc.ok)
		}
	}
}

// FuzzStatusLine checks the status line parser never panics and only
// accepts statuses a response can carry.
func FuzzStatusLine(f *testing.F) {
	for _, s := range []string{"HTTP/1.1 400 Bad Request: x\r\n", "HTTP/1.1 431 R\r\n", "HTTP/1.", "", "HTTP/1.1 999 x"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, p []byte) {
		st, _, ok := statusLine(p)
		if ok && (st < 100 || st > 599) {
			t.Fatalf("statusLine(%q) accepted status %d", p, st)
		}
	})
}

package statuspage

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

const testContent = `{{define "content"}}<h2>Pods</h2><table>{{range .Pods}}<tr><td class="pod">{{.}}</td></tr>{{end}}</table>{{end}}`

type testBody struct{ Pods []string }

func testHandler(pods []string, ds []Decision) *Handler {
	h := &Handler{
		Config:   Config{Refresh: 3 * time.Second, TraceURLTemplate: "https://jaeger.example/trace/{trace_id}"},
		Template: Must(testContent), Tier: "cell", Target: "pod", Title: "celld cell-0", Version: "v1.2.3",
		Body: func(time.Time) (any, error) { return testBody{Pods: pods}, nil },
		Now:  func() time.Time { return time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC) },
	}
	if ds != nil {
		h.Decisions = func() []Decision { return ds }
	}
	return h
}

func get(t *testing.T, h http.Handler) *httptest.ResponseRecorder {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/status", nil))
	return rec
}

func TestHeadersAndStyleHash(t *testing.T) {
	rec := get(t, testHandler([]string{"pod-0"}, nil))
	if rec.Code != http.StatusOK {
		t.Fatalf("status = %d, want 200", rec.Code)
	}
	for k, want := range map[string]string{
		"Content-Type": "text/html; charset=utf-8", "X-Content-Type-Options": "nosniff", "Cache-Control": "no-store",
		"X-Frame-Options": "DENY", "Referrer-Policy": "no-referrer",
	} {
		if got := rec.Header().Get(k); got != want {
			t.Errorf("%s = %q, want %q", k, got, want)
		}
	}
	csp := rec.Header().Get("Content-Security-Policy")
	if !strings.HasPrefix(csp, "default-src 'none'; ") || strings.Contains(csp, "unsafe") || strings.Contains(csp, "script-src") {
		t.Errorf("Content-Security-Policy = %q, want default-src 'none', no unsafe sources, no script", csp)
	}
	// The hash in the header must be the one of the style element the page
	// carries, byte for byte, or a browser drops the style sheet.
	page := rec.Body.String()
	i, j := strings.Index(page, "<style>"), strings.Index(page, "</style>")
	if i < 0 || j < i {
		t.Fatalf("no style element in %q", page)
	}
	sum := sha256.Sum256([]byte(page[i+len("<style>") : j]))
	if want := "'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) + "'"; !strings.Contains(csp, "style-src "+want) {
		t.Errorf("Content-Security-Policy = %q, want style-src %s", csp, want)
	}
	if strings.Contains(page, "style=") {
		t.Error("the page uses a style attribute, which the policy blocks")
	}
	for _, want := range []string{`<meta http-equiv="refresh" content="3">`, "<title>celld cell-0</title>", `<td class="pod">pod-0</td>`, "version v1.2.3"} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
}

func TestNoRefresh(t *testing.T) {
	h := testHandler(nil, nil)
	h.Config.Refresh = 0
	page := get(t, h).Body.String()
	if strings.Contains(page, "http-equiv") || !strings.Contains(page, "does not reload") {
		t.Errorf("a page with refresh 0 reloads or does not say so: %q", page)
	}
}

func TestEscaping(t *testing.T) {
	evil := `<script>alert("x")</script>`
	ds := []Decision{{ID: `a"><script>1</script>`, TraceID: `"><script>2</script>`, Tenant: evil, Model: evil, Path: evil,
		Target: evil, MatchedBlocks: 3, Status: 200, Duration: time.Millisecond, At: time.Date(2026, 11, 27, 11, 59, 58, 0, time.UTC)}}
	page := get(t, testHandler([]string{evil, "<b>bold</b>"}, ds)).Body.String()
	if n := strings.Count(page, "<script"); n != 0 {
		t.Errorf("page holds %d <script elements: %q", n, page)
	}
	if strings.Contains(page, "<b>bold") {
		t.Error("a pod's markup was not escaped")
	}
	if !strings.Contains(page, `<td class="pod">&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;</td>`) {
		t.Errorf("the pod named %s is not shown escaped: %q", evil, page)
	}
	if !strings.Contains(page, `href="/v1/cell/decisions/a%22%3E%3Cscript%3E1%3C%2Fscript%3E"`) {
		t.Errorf("the decision link is not escaped as a path segment: %q", page)
	}
	if !strings.Contains(page, `href="https://jaeger.example/trace/%22%3E%3Cscript%3E2%3C%2Fscript%3E"`) {
		t.Errorf("the trace link is not escaped as a path segment: %q", page)
	}
}

func TestDecisions(t *testing.T) {
	at := time.Date(2026, 11, 27, 11, 59, 57, 0, time.UTC)
	ds := make([]Decision, MaxDecisions+5)
	for i := range ds {
		ds[i] = Decision{ID: "d" + string(rune('a'+i%26)), At: at, Target: "pod-1", Path: "exact", MatchedBlocks: i, Status: 200}
	}
	ds[0].TraceID, ds[0].Status = "4bf92f3577b34da6a3ce929d0e0e4736", 503
	page := get(t, testHandler(nil, ds)).Body.String()
	if got := strings.Count(page, "<tr><td>3.0s ago</td>"); got != MaxDecisions {
		t.Errorf("rows = %d, want %d (MaxDecisions)", got, MaxDecisions)
	}
	for _, want := range []string{
		`<a href="/v1/cell/decisions/da">da</a>`,
		`<a href="https://jaeger.example/trace/4bf92f3577b34da6a3ce929d0e0e4736"><code>4bf92f3577b34da6a3ce929d0e0e4736</code></a>`,
		`<td class="n bad">503</td>`, "<th>pod</th>",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	h := testHandler(nil, []Decision{{ID: "x", TraceID: "abc"}})
	h.Config.TraceURLTemplate = ""
	if page := get(t, h).Body.String(); strings.Contains(page, "jaeger") || !strings.Contains(page, "<code>abc</code>") {
		t.Errorf("without a template the trace id is not plain text: %q", page)
	}
	if page := get(t, testHandler(nil, []Decision{})).Body.String(); !strings.Contains(page, "No decisions yet.") {
		t.Error("an empty record does not say there are no decisions yet")
	}
	if page := get(t, testHandler(nil, nil)).Body.String(); !strings.Contains(page, "keeps no record of recent decisions") {
		t.Error("a daemon without a record of decisions does not say so")
	}
}

func TestRenderFailure(t *testing.T) {
	h := testHandler(nil, nil)
	h.Body = func(time.Time) (any, error) { return nil, errors.New("secret detail") }
	rec := get(t, h)
	if rec.Code != http.StatusInternalServerError {
		t.Fatalf("status = %d, want 500", rec.Code)
	}
	var body struct {
		Error struct{ Message, Type, Code string } `json:"error"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil {
		t.Fatalf("body %q is not OpenAI's error shape: %v", rec.Body, err)
	}
	if body.Error.Type != "server_error" || body.Error.Code != "internal_error" || strings.Contains(rec.Body.String(), "secret") {
		t.Errorf("error = %+v, want server_error/internal_error naming nothing internal", body.Error)
	}
	// A template that fails at execution writes nothing of the page.
	h = testHandler(nil, nil)
	h.Template = Must(`{{define "content"}}{{.Missing}}{{end}}`)
	if rec := get(t, h); rec.Code != http.StatusInternalServerError || strings.Contains(rec.Body.String(), "<html") {
		t.Errorf("a failed render answered %d %q, want a 500 without half a page", rec.Code, rec.Body)
	}
	if _, err := New(`{{define "other"}}{{end}}`); !errors.Is(err, ErrNoContent) {
		t.Errorf("New without content: err = %v, want ErrNoContent", err)
	}
}

func TestConfigValidate(t *testing.T) {
	for _, tc := range []struct {
		name  string
		c     Config
		field string // "" : valid
	}{
		{"default", DefaultConfig(), ""},
		{"off", Config{}, ""},
		{"trace template", Config{Refresh: time.Minute, TraceURLTemplate: "https://jaeger.example/trace/{trace_id}"}, ""},
		{"too fast", Config{Refresh: 500 * time.Millisecond}, "status.refresh"},
		{"fraction", Config{Refresh: 1500 * time.Millisecond}, "status.refresh"},
		{"negative", Config{Refresh: -time.Second}, "status.refresh"},
		{"too slow", Config{Refresh: 2 * time.Hour}, "status.refresh"},
		{"no placeholder", Config{TraceURLTemplate: "https://jaeger.example/trace/"}, "status.trace_url_template"},
		{"javascript", Config{TraceURLTemplate: "javascript:alert('{trace_id}')"}, "status.trace_url_template"},
		{"relative", Config{TraceURLTemplate: "/trace/{trace_id}"}, "status.trace_url_template"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.c.Validate()
			switch {
			case tc.field == "" && err != nil:
				t.Errorf("Validate() = %v, want nil", err)
			case tc.field != "" && (!errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), tc.field+" = ")):
				t.Errorf("Validate() = %v, want ErrInvalidConfig naming %s and its value", err, tc.field)
			}
		})
	}
}

func TestFormat(t *testing.T) {
	for _, tc := range []struct{ got, want string }{
		{Duration(-1), "-"}, {Duration(500), "500ns"}, {Duration(850 * time.Microsecond), "850µs"},
		{Duration(12300 * time.Microsecond), "12.3ms"}, {Duration(4200 * time.Millisecond), "4.2s"},
		{Duration(185 * time.Second), "3m05s"}, {Duration(130 * time.Minute), "2h10m"},
		{Bytes(512), "512 B"}, {Bytes(1536), "1.5 KiB"}, {Bytes(3 << 20), "3.0 MiB"}, {Bytes(5 << 40), "5.0 TiB"},
		{Bytes(1 << 52), "4096.0 TiB"},
		{Percent(0.1234), "12.3%"}, {Percent(Ratio(1, 0)), "-"}, {Percent(math.Inf(1)), "-"}, {Percent(Ratio(3, 4)), "75.0%"},
		{Rate(math.NaN()), "-"}, {Rate(0), "0%"}, {Rate(0.00001), "< 0.01%"}, {Rate(0.0037), "0.37%"},
		{Count(0), "0"}, {Count(999), "999"}, {Count(1000), "1 000"}, {Count(12345678), "12 345 678"}, {Count(-1234), "-1 234"},
		{Age(time.Unix(10, 0), time.Time{}), "never"}, {Age(time.Unix(10, 0), time.Unix(7, 0)), "3.0s ago"},
	} {
		if tc.got != tc.want {
			t.Errorf("got %q, want %q", tc.got, tc.want)
		}
	}
}

// FuzzRender renders pages of arbitrary names and checks that no input
// becomes markup: the page holds no element the layout does not write,
// and every link stays where it was built.
func FuzzRender(f *testing.F) {
	for _, s := range []string{"pod-0", "<script>alert(1)</script>", `"><img src=x onerror=alert(1)>`, "javascript:alert(1)",
		"{{.}}", "\x00\xff", "</style><script>", "a/../../b?c#d"} {
		f.Add(s, s)
	}
	f.Fuzz(func(t *testing.T, name, id string) {
		h := testHandler([]string{name}, []Decision{{ID: id, TraceID: id, Tenant: name, Model: name, Path: name, Target: name}})
		rec := get(t, h)
		if rec.Code != http.StatusOK {
			t.Fatalf("status = %d", rec.Code)
		}
		page := rec.Body.String()
		if n := strings.Count(strings.ToLower(page), "<link"); n != 1 {
			t.Fatalf("page holds %d link elements (want the icon's) for name %q", n, name)
		}
		for _, tag := range []string{"<script", "<img", "<iframe", "<object", "<svg"} {
			if strings.Contains(strings.ToLower(page), tag) {
				t.Fatalf("page holds %s for name %q id %q", tag, name, id)
			}
		}
		if n := strings.Count(page, "<style>"); n != 1 {
			t.Fatalf("page holds %d style elements for name %q", n, name)
		}
		if id != "" && !strings.Contains(page, `href="/v1/cell/decisions/`) {
			t.Fatalf("decision %q lost its link", id)
		}
		if id != "" && !strings.Contains(page, `href="https://jaeger.example/trace/`) {
			t.Fatalf("trace %q lost its link", id)
		}
	})
}

func BenchmarkRender(b *testing.B) {
	pods := make([]string, 256)
	for i := range pods {
		pods[i] = "pod-" + strings.Repeat("x", i%8)
	}
	ds := make([]Decision, MaxDecisions)
	for i := range ds {
		ds[i] = Decision{ID: "d", TraceID: "4bf92f3577b34da6a3ce929d0e0e4736", Target: "pod-1", Path: "exact", Status: 200}
	}
	h := testHandler(pods, ds)
	req := httptest.NewRequest(http.MethodGet, "/status", nil)
	b.ReportAllocs()
	for b.Loop() {
		h.ServeHTTP(httptest.NewRecorder(), req)
	}
}

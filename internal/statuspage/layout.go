package statuspage

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"html/template"
	"io"
	"time"
)

// css is the pages' only style sheet, inlined in every page and allowed by
// its hash in the Content-Security-Policy (StyleHash), so a page needs
// nothing from anywhere and no 'unsafe-inline'. It must contain no
// template action: the hash is of these exact bytes. The pages use
// classes only: style attributes would need 'unsafe-hashes'.
const css = `
:root{color-scheme:light dark;--fg:#1b1f24;--muted:#5b636e;--line:#d5d9de;--head:#f2f4f6;--ok:#1a7f37;--warn:#9a6700;--bad:#cf222e;--link:#0a58ca}
@media (prefers-color-scheme:dark){:root{--fg:#e6e8eb;--muted:#9aa3ad;--line:#3a4048;--head:#22272e;--ok:#3fb950;--warn:#d29922;--bad:#f85149;--link:#6cb6ff}}
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;color:var(--fg);margin:1.2rem 1.6rem;max-width:110rem}
h1{font-size:1.35rem;margin:0 0 .2rem}h2{font-size:1.05rem;margin:1.6rem 0 .5rem;border-bottom:1px solid var(--line);padding-bottom:.2rem}
.meta,.note{color:var(--muted);font-size:.9rem}
table{border-collapse:collapse;margin:.3rem 0;font-variant-numeric:tabular-nums}
th,td{border:1px solid var(--line);padding:.25rem .55rem;text-align:left;vertical-align:top}
th{background:var(--head);font-weight:600}
td.n{text-align:right}
.ok{color:var(--ok);font-weight:600}.warn{color:var(--warn);font-weight:600}.bad{color:var(--bad);font-weight:600}
a{color:var(--link)}code{font-size:.9em}td code{white-space:nowrap}
dl.kv{display:grid;grid-template-columns:max-content auto;gap:.15rem 1rem;margin:.3rem 0}dl.kv dt{color:var(--muted)}dl.kv dd{margin:0}
meter{width:6rem;vertical-align:middle}
`

// StyleHash is the CSP source that allows the pages' inline style sheet.
var StyleHash = func() string {
	sum := sha256.Sum256([]byte(css))
	return "'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) + "'"
}()

// ContentSecurityPolicy is the header every status page is served with:
// nothing may load but the inline style sheet (by hash) and same-origin or
// inline images; no script, no frames, no forms, no plug-ins.
var ContentSecurityPolicy = "default-src 'none'; style-src " + StyleHash +
	"; img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// layout is the base page. A daemon's content template defines "content"
// (its sections); "decisions" is the shared table of recent decisions.
// The empty data: icon keeps browsers from asking the daemon for
// /favicon.ico (a 404 in the console).
const layout = `<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
{{if .RefreshSeconds}}<meta http-equiv="refresh" content="{{.RefreshSeconds}}">{{end}}
<title>{{.Title}}</title>
<link rel="icon" href="data:,">
<style>` + css + `</style>
</head><body>
<h1>{{.Title}}</h1>
<p class="meta">Generated <time id="generated" datetime="{{.Now.UTC.Format "2006-01-02T15:04:05.000Z07:00"}}">{{.Now.UTC.Format "2006-01-02 15:04:05.000 UTC"}}</time>
{{- if .Version}} · version {{.Version}}{{end}}
{{- if .RefreshSeconds}} · reloads every {{.RefreshSeconds}}s{{else}} · does not reload{{end}}</p>
{{template "content" .Body}}
{{template "decisions" .Decisions}}
</body></html>
{{define "decisions"}}<h2 id="decisions">Last decisions</h2>
{{- if not .Available}}
<p class="note">This daemon keeps no record of recent decisions.</p>
{{- else if not .Rows}}
<p class="note">No decisions yet.</p>
{{- else}}
<table id="decisions-table"><thead><tr><th>when</th><th>decision</th><th>tenant</th><th>model</th><th>path</th><th>{{.TargetName}}</th><th>matched blocks</th><th>status</th><th>took</th><th>trace</th></tr></thead><tbody>
{{- range .Rows}}
<tr><td>{{age $.Now .At}}</td><td><a href="{{.Link}}">{{.ID}}</a></td><td>{{.Tenant}}</td><td>{{.Model}}</td><td>{{.Path}}</td><td>{{.Target}}</td><td class="n">{{.MatchedBlocks}}</td>
<td class="n{{if ge .Status 500}} bad{{else if ge .Status 400}} warn{{end}}">{{if .Status}}{{.Status}}{{else}}-{{end}}</td><td class="n">{{duration .Duration}}</td>
<td>{{if .TraceLink}}<a href="{{.TraceLink}}"><code>{{.TraceID}}</code></a>{{else if .TraceID}}<code>{{.TraceID}}</code>{{else}}-{{end}}</td></tr>
{{- end}}
</tbody></table>
{{- end}}{{end}}`

// Template is a daemon's page: the base layout with the daemon's content.
// It is safe for concurrent use.
type Template struct{ t *template.Template }

// New parses a daemon's content template, which must define "content"; it
// is executed with Page.Body and may use the helpers (duration, bytes,
// count, percent, rate, ratio, age, ms, seconds, meterval).
func New(content string) (*Template, error) {
	t, err := template.New("page").Funcs(funcs()).Parse(layout)
	if err != nil {
		return nil, fmt.Errorf("statuspage: layout: %w", err)
	}
	if _, err := t.Parse(content); err != nil {
		return nil, fmt.Errorf("statuspage: content: %w", err)
	}
	if t.Lookup("content") == nil {
		return nil, fmt.Errorf("statuspage: content: %w", ErrNoContent)
	}
	return &Template{t: t}, nil
}

// Must is New that panics, for templates that are constants of the
// program.
func Must(content string) *Template {
	t, err := New(content)
	if err != nil {
		panic(err)
	}
	return t
}

// Page is one rendering of a status page.
type Page struct {
	// Title heads the page and names it in the browser.
	Title string
	// Now is when the page was generated (the clock of every age shown).
	Now time.Time
	// RefreshSeconds is how often the page reloads itself; 0: never.
	RefreshSeconds int
	// Version is the build's version ("" leaves it out).
	Version string
	// Body is the daemon's data for its content template.
	Body any
	// Decisions is the table of recent decisions.
	Decisions DecisionsView
}

// Render writes the page to w. It renders into a buffer first, so a
// failing template writes nothing.
func (t *Template) Render(w io.Writer, p *Page) error {
	var buf bytes.Buffer
	if err := t.t.Execute(&buf, p); err != nil {
		return fmt.Errorf("statuspage: render: %w", err)
	}
	_, err := w.Write(buf.Bytes())
	return err
}

package statuspage

import (
	"errors"
	"flag"
	"fmt"
	"net/url"
	"strings"
	"time"
)

// ErrInvalidConfig is wrapped by every error Config.Validate returns.
var ErrInvalidConfig = errors.New("statuspage: invalid config")

// TraceIDPlaceholder is what a trace URL template's trace id is written as.
const TraceIDPlaceholder = "{trace_id}"

// Config configures a daemon's status page.
type Config struct {
	// Refresh is how often the page reloads itself (a <meta
	// http-equiv="refresh">, no script); 0 turns reloading off. Whole
	// seconds, 1s to 1h.
	Refresh time.Duration `yaml:"refresh"`
	// TraceURLTemplate, when set, links each recent decision's trace id
	// to a tracing UI: an http or https URL in which {trace_id} stands for
	// the id, such as https://jaeger.example/trace/{trace_id}. Empty: the
	// trace id is shown as text.
	TraceURLTemplate string `yaml:"trace_url_template"`
}

// DefaultConfig is a page that reloads every 5 seconds and links no
// traces.
func DefaultConfig() Config { return Config{Refresh: 5 * time.Second} }

// Validate names the first bad field and its value.
func (c Config) Validate() error {
	bad := func(field string, v any, why string) error {
		return fmt.Errorf("%w: %s = %v: %s", ErrInvalidConfig, field, v, why)
	}
	if c.Refresh != 0 && (c.Refresh < time.Second || c.Refresh > time.Hour || c.Refresh%time.Second != 0) {
		return bad("status.refresh", c.Refresh, "want 0 (off) or whole seconds from 1s to 1h")
	}
	if t := c.TraceURLTemplate; t != "" {
		if !strings.Contains(t, TraceIDPlaceholder) {
			return bad("status.trace_url_template", fmt.Sprintf("%q", t), "want a URL containing "+TraceIDPlaceholder)
		}
		u, err := url.Parse(strings.ReplaceAll(t, TraceIDPlaceholder, "0"))
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return bad("status.trace_url_template", fmt.Sprintf("%q", t), "want an http or https URL")
		}
	}
	return nil
}

// TraceURL returns the link to a trace id under the template, "" when
// the template or the id is empty. The id is escaped as a path segment,
// so whatever a client sent as its trace context cannot leave the URL.
func (c Config) TraceURL(traceID string) string {
	if c.TraceURLTemplate == "" || traceID == "" {
		return ""
	}
	return strings.ReplaceAll(c.TraceURLTemplate, TraceIDPlaceholder, url.PathEscape(traceID))
}

// BindFlags defines --status-refresh and --trace-url-template on fs with
// d's values as defaults. The returned function applies the flags given
// on the command line to c (flags not given leave c as it is, so a
// configuration file's values stand).
func BindFlags(fs *flag.FlagSet, d Config) func(c *Config) {
	refresh := fs.Duration("status-refresh", d.Refresh, "how often the /status page reloads itself (0: never; whole seconds, 1s to 1h)")
	trace := fs.String("trace-url-template", d.TraceURLTemplate,
		"link the /status page's trace ids to a tracing UI: a URL with "+TraceIDPlaceholder+", e.g. https://jaeger.example/trace/"+TraceIDPlaceholder)
	return func(c *Config) {
		fs.Visit(func(f *flag.Flag) {
			switch f.Name {
			case "status-refresh":
				c.Refresh = *refresh
			case "trace-url-template":
				c.TraceURLTemplate = *trace
			}
		})
	}
}

package prometheus

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/prometheus/promql/parser"
	"gopkg.in/yaml.v3"
)

// rulesFile is the recording and alerting rules, beside this test.
const rulesFile = "cellrouter-rules.yml"

// ruleGroups is the shape of a Prometheus rules file.
type ruleGroups struct {
	Groups []struct {
		Name  string `yaml:"name"`
		Rules []struct {
			Record string `yaml:"record"`
			Alert  string `yaml:"alert"`
			Expr   string `yaml:"expr"`
		} `yaml:"rules"`
	} `yaml:"groups"`
}

func loadRules(t *testing.T) ruleGroups {
	t.Helper()
	b, err := os.ReadFile(rulesFile)
	if err != nil {
		t.Fatal(err)
	}
	var g ruleGroups
	if err := yaml.Unmarshal(b, &g); err != nil {
		t.Fatalf("%s: %v", rulesFile, err)
	}
	return g
}

// query is one PromQL expression and where it was found.
type query struct{ where, expr string }

// dashboard is the part of a Grafana dashboard the test reads: panels
// (rows nest theirs) with their targets, and the template variables.
type dashboard struct {
	Title      string  `json:"title"`
	UID        string  `json:"uid"`
	Panels     []panel `json:"panels"`
	Templating struct {
		List []struct {
			Name  string `json:"name"`
			Type  string `json:"type"`
			Query any    `json:"query"`
		} `json:"list"`
	} `json:"templating"`
}

type panel struct {
	Title   string  `json:"title"`
	Type    string  `json:"type"`
	Panels  []panel `json:"panels"`
	Targets []struct {
		Expr string `json:"expr"`
	} `json:"targets"`
}

// grafanaVars are the dashboard variables the expressions use, and what
// stands for each when the expression is parsed: Grafana replaces them
// before Prometheus sees the query.
var grafanaVars = strings.NewReplacer("$__rate_interval", "5m", "$__interval", "1m", "$cell", ".*", "$instance", ".*")

// labelValues is a query variable's label_values(selector, label).
var labelValues = regexp.MustCompile(`^label_values\((.+),\s*[a-zA-Z_][a-zA-Z0-9_]*\)$`)

// dashboardQueries reads every dashboard under ../grafana and returns the
// PromQL of every panel target and query variable. It fails on a panel
// with no query, a variable it does not know or a dashboard of no panels.
func dashboardQueries(t *testing.T) []query {
	t.Helper()
	files, err := filepath.Glob("../grafana/*.json")
	if err != nil || len(files) < 2 {
		t.Fatalf("dashboards under ../grafana: %v (err %v), want the global tier's and the cell's", files, err)
	}
	var out []query
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var d dashboard
		if err := json.Unmarshal(b, &d); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if d.UID == "" || d.Title == "" {
			t.Errorf("%s: no uid or title", f)
		}
		n := 0
		var walk func(ps []panel)
		walk = func(ps []panel) {
			for _, p := range ps {
				if p.Type == "row" {
					walk(p.Panels)
					continue
				}
				n++
				if len(p.Targets) == 0 {
					t.Errorf("%s: panel %q has no query", f, p.Title)
				}
				for _, tg := range p.Targets {
					out = append(out, query{f + ": " + p.Title, tg.Expr})
				}
			}
		}
		walk(d.Panels)
		if n == 0 {
			t.Errorf("%s: no panels", f)
		}
		for _, v := range d.Templating.List {
			if v.Type != "query" {
				continue
			}
			var q string
			switch x := v.Query.(type) {
			case string:
				q = x
			case map[string]any:
				q, _ = x["query"].(string)
			}
			m := labelValues.FindStringSubmatch(q)
			if m == nil {
				t.Errorf("%s: variable %s: query %q is not label_values(selector, label)", f, v.Name, q)
				continue
			}
			out = append(out, query{f + ": variable " + v.Name, m[1]})
		}
	}
	return out
}

// metricNames parses expr and returns the metric names its selectors
// name (by name or by a __name__ equality matcher).
func metricNames(expr string) ([]string, error) {
	e, err := parser.NewParser(parser.Options{}).ParseExpr(grafanaVars.Replace(expr))
	if err != nil {
		return nil, err
	}
	var names []string
	parser.Inspect(e, func(n parser.Node, _ []parser.Node) error {
		vs, ok := n.(*parser.VectorSelector)
		if !ok {
			return nil
		}
		if vs.Name != "" {
			names = append(names, vs.Name)
		}
		for _, m := range vs.LabelMatchers {
			if m.Name == "__name__" && vs.Name == "" {
				names = append(names, m.Value)
			}
		}
		return nil
	})
	return names, nil
}

// TestQueriesNameExportedMetrics parses every dashboard panel's PromQL,
// every dashboard variable's selector, every rule's expression and the
// example autoscalers' queries (../keda), and
// checks that each metric they name is one the daemons of the demo fleet
// export (scraped live after some traffic) or a recording rule's output.
func TestQueriesNameExportedMetrics(t *testing.T) {
	rules := loadRules(t)
	var queries []query
	recorded := map[string]bool{}
	for _, g := range rules.Groups {
		for _, r := range g.Rules {
			if r.Record != "" {
				recorded[r.Record] = true
			}
			queries = append(queries, query{rulesFile + ": " + g.Name + "/" + r.Record + r.Alert, r.Expr})
		}
	}
	queries = append(queries, dashboardQueries(t)...)
	queries = append(queries, scalerQueries(t)...)

	exported := scrapeNames(t, startDemo(t))
	if !exported["cellrouter_global_requests_total"] || !exported["cellrouter_pods"] {
		t.Fatalf("the scrape lacks the global tier's or the cells' metrics: %d names", len(exported))
	}
	used := map[string]bool{}
	for _, q := range queries {
		if strings.Contains(grafanaVars.Replace(q.expr), "$") {
			t.Errorf("%s: %q uses a variable the dashboards do not define", q.where, q.expr)
			continue
		}
		names, err := metricNames(q.expr)
		if err != nil {
			t.Errorf("%s: %q: %v", q.where, q.expr, err)
			continue
		}
		if len(names) == 0 {
			t.Errorf("%s: %q names no metric", q.where, q.expr)
		}
		for _, n := range names {
			used[n] = true
			if !exported[n] && !recorded[n] {
				t.Errorf("%s: %q names %s, which no daemon exports and no rule records", q.where, q.expr, n)
			}
		}
	}
	// Every recording rule is shown somewhere or used by an alert.
	for r := range recorded {
		if !used[r] {
			t.Errorf("recording rule %s is used by no dashboard or alert", r)
		}
	}
	t.Logf("%d queries name %d metrics; the fleet exports %d", len(queries), len(used), len(exported))
}

// TestMetricNamesReadsSelectors checks the name extraction the test above
// relies on, on expressions of known names.
func TestMetricNamesReadsSelectors(t *testing.T) {
	for _, tc := range []struct {
		expr string
		want []string
	}{
		{`sum by (path) (rate(cellrouter_global_requests_total[$__rate_interval]))`, []string{"cellrouter_global_requests_total"}},
		{`a / on(cell) b{cell=~"$cell"} offset 1h`, []string{"a", "b"}},
		{`{__name__="x", job="y"}`, []string{"x"}},
		{`histogram_quantile(0.99, sum by (le) (rate(h_bucket[5m]))) > bool 1`, []string{"h_bucket"}},
	} {
		got, err := metricNames(tc.expr)
		if err != nil {
			t.Errorf("%q: %v", tc.expr, err)
			continue
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("%q: got %v, want %v", tc.expr, got, tc.want)
		}
	}
	if _, err := metricNames(`sum(rate(x[5m])`); err == nil {
		t.Error("an unbalanced expression parsed")
	}
}

// scalerQueries returns the Prometheus queries of the example KEDA
// ScaledObjects under ../keda; it fails when there are none.
func scalerQueries(t *testing.T) []query {
	t.Helper()
	files, err := filepath.Glob("../keda/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("KEDA examples under ../keda: %v (err %v)", files, err)
	}
	var out []query
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var so struct {
			Kind string `yaml:"kind"`
			Spec struct {
				Triggers []struct {
					Type     string            `yaml:"type"`
					Metadata map[string]string `yaml:"metadata"`
				} `yaml:"triggers"`
			} `yaml:"spec"`
		}
		if err := yaml.Unmarshal(b, &so); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		n := 0
		for _, tr := range so.Spec.Triggers {
			if tr.Type == "prometheus" {
				n++
				out = append(out, query{f + ": " + so.Kind, tr.Metadata["query"]})
			}
		}
		if so.Kind != "ScaledObject" || n == 0 {
			t.Errorf("%s: a %s with %d prometheus triggers, want a ScaledObject with one", f, so.Kind, n)
		}
	}
	return out
}

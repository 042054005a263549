package cellrouter

import (
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/cellrouter/cellrouter"

// goPackages returns the directories under the repository root that hold Go
// files, skipping testdata, third_party and hidden directories.
func goPackages(t *testing.T) []string {
	t.Helper()
	var dirs []string
	seen := map[string]bool{}
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			name := d.Name()
			if path != "." && (strings.HasPrefix(name, ".") || name == "testdata" || name == "third_party" || name == "node_modules") {
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(path, ".go") && !seen[filepath.Dir(path)] {
			seen[filepath.Dir(path)] = true
			dirs = append(dirs, filepath.Dir(path))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return dirs
}

// TestEveryPackageHasDocComment checks that each package keeps its doc
// comment in a file named doc.go, and that the comment is there.
func TestEveryPackageHasDocComment(t *testing.T) {
	for _, dir := range goPackages(t) {
		entries, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		files := 0
		for _, e := range entries {
			if strings.HasSuffix(e.Name(), ".go") && !strings.HasSuffix(e.Name(), "_test.go") {
				files++
			}
		}
		if files == 0 {
			continue // a directory of tests only
		}
		doc := filepath.Join(dir, "doc.go")
		f, err := parser.ParseFile(token.NewFileSet(), doc, nil, parser.PackageClauseOnly|parser.ParseComments)
		if err != nil {
			t.Errorf("package in %s: no readable doc.go: %v", dir, err)
			continue
		}
		if f.Doc == nil || strings.TrimSpace(f.Doc.Text()) == "" {
			t.Errorf("%s has no package doc comment", doc)
		}
	}
}

// forbidden lists import rules: packages under the key must not import
// packages under any of the values ("x$" bans package x alone, "x" bans x
// and everything under it). Dependencies point one way:
//
//   - the shared packages (internal/: the servers' plumbing; cachekey/: how
//     a prompt becomes the cache's keys) import no tier;
//   - gossip and global see nothing of the cell: they share the cell's
//     hashing, relay and plumbing through the packages above;
//   - the cell daemon never imports the global tier;
//   - the index and the hashing stay leaf packages.
//
// Who may import loadtest is a rule of its own (loadtestImporters).
var forbidden = map[string][]string{
	"internal":           {"cell", "global", "gossip", "loadtest", "cmd"},
	"cachekey":           {"cell", "global", "gossip", "loadtest", "cmd", "internal"},
	"gossip":             {"cell", "global", "cmd"},
	"global":             {"cell", "cmd"},
	"cell":               {"global", "cmd"},
	"api":                {"cell", "global", "gossip", "cmd", "loadtest"},
	"cell/index":         {"cell/events", "cell/pipeline", "api", "gossip"},
	"cachekey/blockhash": {"cachekey/tokenizer"},
	"cell/events":        {"cell/pipeline"},
	"loadtest/engine":    {"cell/events", "cell/pipeline"},
}

// loadtestImporters lists the packages outside loadtest that may import a
// loadtest package: the load tester's own command, and the one named edge
// from the global daemon to the local fleet its --demo runs (the demo is
// the README's first command, and a fleet of simulated pods and cells is
// what loadtest/fleet is). Nothing else may depend on the load tester.
var loadtestImporters = map[string]string{
	"cmd/loadtest": "",
	"cmd/globald":  "loadtest/fleet",
}

// under reports whether package path p is base or below it.
func under(p, base string) bool {
	return p == base || strings.HasPrefix(p, base+"/")
}

// banned reports whether target matches ban ("x$": x alone; "x": x and
// below).
func banned(target, ban string) bool {
	if exact, ok := strings.CutSuffix(ban, "$"); ok {
		return target == exact
	}
	return under(target, ban)
}

// checkImport returns why from must not import target, or "".
func checkImport(from, target string) string {
	for key, bans := range forbidden {
		if !under(from, key) {
			continue
		}
		for _, ban := range bans {
			if banned(target, ban) {
				return key + " must not depend on " + ban
			}
		}
	}
	if under(target, "loadtest") && !under(from, "loadtest") {
		allowed, ok := loadtestImporters[from]
		if !ok || (allowed != "" && target != allowed) {
			return "only the load tester (and cmd/globald's demo, through loadtest/fleet) may depend on loadtest"
		}
	}
	return ""
}

// TestDependencies enforces the import rules on every package's code.
// Test files may wire whole systems together (global's tests start real
// cells), so the rules are about what the code itself depends on.
func TestDependencies(t *testing.T) {
	for _, dir := range goPackages(t) {
		rel := filepath.ToSlash(dir)
		entries, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			if !strings.HasSuffix(e.Name(), ".go") || strings.HasSuffix(e.Name(), "_test.go") {
				continue
			}
			f, err := parser.ParseFile(token.NewFileSet(), filepath.Join(dir, e.Name()), nil, parser.ImportsOnly)
			if err != nil {
				t.Fatalf("%s/%s: %v", dir, e.Name(), err)
			}
			for _, imp := range f.Imports {
				path, _ := strconv.Unquote(imp.Path.Value)
				target, ok := strings.CutPrefix(path, module+"/")
				if !ok {
					continue
				}
				if why := checkImport(rel, target); why != "" {
					t.Errorf("%s/%s imports %s: %s", dir, e.Name(), target, why)
				}
			}
		}
	}
}

// TestDependencyRules checks the rules themselves on the edges they exist
// to catch, so that a rule loosened by mistake fails here.
func TestDependencyRules(t *testing.T) {
	for _, tc := range []struct {
		from, target string
		ok           bool
	}{
		{"global", "cell", false},
		{"global", "cell/replica", false},
		{"gossip", "cell/index", false},
		{"gossip", "cachekey/blockhash", true},
		{"global", "internal/proxy", true},
		{"internal/proxy", "cell/load", false},
		{"internal/edge", "gossip", false},
		{"cachekey/tokenizer", "global", false},
		{"cell", "global", false},
		{"cell", "internal/edge", true},
		{"cmd/globald", "loadtest/fleet", true},
		{"cmd/globald", "loadtest/enginesim", false},
		{"cmd/celld", "loadtest/fleet", false},
		{"cell", "loadtest/engine", false},
		{"global", "loadtest/hierarchy", false},
		{"cmd/loadtest", "loadtest/hierarchy", true},
		{"loadtest/fleet", "cell", true},
		{"loadtest/hierarchy", "loadtest/engine", true},
	} {
		why := checkImport(tc.from, tc.target)
		if (why == "") != tc.ok {
			t.Errorf("%s importing %s: allowed = %v (%q), want %v", tc.from, tc.target, why == "", why, tc.ok)
		}
	}
}

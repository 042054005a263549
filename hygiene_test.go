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

// TestEveryPackageHasDocComment checks that each package has a package doc
// comment in one of its non-test files.
func TestEveryPackageHasDocComment(t *testing.T) {
	for _, dir := range goPackages(t) {
		fset := token.NewFileSet()
		entries, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		found, files := false, 0
		for _, e := range entries {
			name := e.Name()
			if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
				continue
			}
			files++
			f, err := parser.ParseFile(fset, filepath.Join(dir, name), nil, parser.PackageClauseOnly|parser.ParseComments)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			if f.Doc != nil && strings.TrimSpace(f.Doc.Text()) != "" {
				found = true
			}
		}
		if files > 0 && !found {
			t.Errorf("package in %s has no package doc comment", dir)
		}
	}
}

// forbidden lists import rules: packages under the key must not import
// packages under any of the values. Dependencies point one way: the global
// tier may use the cell's hashing and gossip, never the other way round, and
// the index and hashing stay leaf packages.
var forbidden = map[string][]string{
	"cell":            {"global", "cmd"},
	"gossip":          {"global", "cmd"},
	"api":             {"global", "cmd", "loadtest"},
	"cell/index":      {"cell/events", "cell/pipeline", "api", "gossip"},
	"cell/blockhash":  {"cell/index", "cell/events", "api", "gossip"},
	"cell/events":     {"cell/pipeline", "loadtest"},
	"loadtest/engine": {"cell/events", "cell/pipeline"},
	// The global tier shares hashing, the relay and telemetry with the
	// cell, never the cell daemon ("cell$": that package only).
	"global": {"cell$", "cell/index", "cell/events", "cell/pipeline", "cmd"},
}

// TestImportDirection enforces the forbidden import rules.
func TestImportDirection(t *testing.T) {
	for _, dir := range goPackages(t) {
		rel := filepath.ToSlash(dir)
		entries, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			// Test files may wire whole systems together (integration
			// tests); the rules are about what the code depends on.
			if !strings.HasSuffix(e.Name(), ".go") || strings.HasSuffix(e.Name(), "_test.go") {
				continue
			}
			f, err := parser.ParseFile(token.NewFileSet(), filepath.Join(dir, e.Name()), nil, parser.ImportsOnly)
			if err != nil {
				t.Fatalf("%s/%s: %v", dir, e.Name(), err)
			}
			for _, imp := range f.Imports {
				path, _ := strconv.Unquote(imp.Path.Value)
				if !strings.HasPrefix(path, module+"/") {
					continue
				}
				target := strings.TrimPrefix(path, module+"/")
				for from, bans := range forbidden {
					if rel != from && !strings.HasPrefix(rel, from+"/") {
						continue
					}
					for _, ban := range bans {
						exact, hit := strings.CutSuffix(ban, "$")
						if target == exact || (!hit && strings.HasPrefix(target, ban+"/")) {
							t.Errorf("%s/%s imports %s: %s must not depend on %s", dir, e.Name(), target, from, ban)
						}
					}
				}
			}
		}
	}
}

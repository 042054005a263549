package cellrouter

import (
	"net"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/cellrouter/cellrouter/cell"
	"github.com/cellrouter/cellrouter/global"
)

// readmeCommands returns the command lines of the first sh block of the
// README section titled title, comments removed, split into words.
func readmeCommands(t *testing.T, title string) [][]string {
	t.Helper()
	data, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(data), "\n## "+title+"\n")
	if !ok {
		t.Fatalf("README has no section %q", title)
	}
	_, block, ok := strings.Cut(section, "```sh\n")
	if !ok {
		t.Fatalf("README section %q has no sh block", title)
	}
	block, _, _ = strings.Cut(block, "```")
	var out [][]string
	for _, line := range strings.Split(block, "\n") {
		line, _, _ = strings.Cut(line, " #")
		if f := strings.Fields(line); len(f) > 0 {
			out = append(out, f)
		}
	}
	return out
}

// flagValues reads "--name value" and "--name=value" pairs.
func flagValues(args []string) map[string]string {
	out := map[string]string{}
	for i := 0; i < len(args); i++ {
		name, ok := strings.CutPrefix(args[i], "--")
		if !ok {
			continue
		}
		if n, v, ok := strings.Cut(name, "="); ok {
			out[n] = v
		} else if i+1 < len(args) {
			out[name] = args[i+1]
			i++
		}
	}
	return out
}

// TestRunningItForRealOnOneHost checks that the commands of the README's
// "Running it for real" run side by side on one host as written: globald's
// listeners, the cell's (from its configuration file) and the pods the
// configuration lists use distinct ports, and the cell seeds globald's
// gossip address.
func TestRunningItForRealOnOneHost(t *testing.T) {
	ports := map[string]string{} // port -> who listens on it
	listen := func(who, addr string) {
		t.Helper()
		if u, err := url.Parse(addr); err == nil && u.Host != "" {
			addr = u.Host // tcp://127.0.0.1:5557
		}
		_, port, err := net.SplitHostPort(addr)
		if err != nil {
			t.Fatalf("%s: address %q: %v", who, addr, err)
		}
		if other, ok := ports[port]; ok && port != "0" {
			t.Errorf("%s and %s both listen on port %s", who, other, port)
		}
		ports[port] = who
	}
	var gossipAddr string
	var seeds []string
	cells, globals := 0, 0
	for _, cmd := range readmeCommands(t, "Running it for real") {
		flags := flagValues(cmd)
		switch {
		case slices.Contains(cmd, "./cmd/globald") || cmd[0] == "globald":
			globals++
			d, p := global.DefaultConfig(), global.DefaultPoolConfig()
			for name, def := range map[string]string{"http-addr": d.HTTPAddr, "grpc-addr": d.GRPCAddr, "gossip-bind": p.Bind} {
				if _, ok := flags[name]; !ok {
					flags[name] = def
				}
			}
			listen("globald http", flags["http-addr"])
			listen("globald grpc", flags["grpc-addr"])
			listen("globald gossip", flags["gossip-bind"])
			gossipAddr = flags["gossip-bind"]
		case slices.Contains(cmd, "./cmd/celld") || cmd[0] == "celld":
			cells++
			cfg, err := cell.LoadConfig(flags["config"])
			if err != nil {
				t.Fatalf("celld --config %q: %v", flags["config"], err)
			}
			if v, ok := flags["http-addr"]; ok {
				cfg.HTTPAddr = v
			}
			if v, ok := flags["grpc-addr"]; ok {
				cfg.GRPCAddr = v
			}
			listen("celld http", cfg.HTTPAddr)
			listen("celld grpc", cfg.GRPCAddr)
			if cfg.Gossip.Bind == "" {
				t.Errorf("celld --config %s: no gossip.bind, so the cell joins no pool", flags["config"])
			} else {
				listen("celld gossip", cfg.Gossip.Bind)
			}
			seeds = append(seeds, cfg.Gossip.Seeds...)
			for _, p := range cfg.Pods {
				listen("pod "+p.ID, p.Address)
				for _, ep := range []string{p.ZMQEndpoint, p.ReplayEndpoint} {
					if ep != "" {
						listen("pod "+p.ID+" KV events", ep)
					}
				}
			}
		}
	}
	if cells == 0 || globals == 0 {
		t.Fatalf("got %d celld and %d globald commands, want both", cells, globals)
	}
	if !slices.Contains(seeds, gossipAddr) {
		t.Errorf("the cell's gossip seeds %q do not include globald's gossip address %s", seeds, gossipAddr)
	}
}

// TestReadmeDocumentsGossip checks that the README names every field of
// the cell's gossip section.
func TestReadmeDocumentsGossip(t *testing.T) {
	data, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	typ := reflect.TypeOf(cell.GossipConfig{})
	for i := range typ.NumField() {
		if key := typ.Field(i).Tag.Get("yaml"); !strings.Contains(string(data), "`"+key+"`") {
			t.Errorf("README does not document gossip.%s", key)
		}
	}
}

// layoutPaths returns the paths the README's Layout table names in its
// first column, with {a,b} alternatives expanded.
func layoutPaths(t *testing.T) []string {
	t.Helper()
	data, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(data), "\n## Layout\n")
	if !ok {
		t.Fatal("README has no Layout section")
	}
	section, _, _ = strings.Cut(section, "\n## ")
	var out []string
	for _, line := range strings.Split(section, "\n") {
		cells := strings.Split(line, "|")
		if len(cells) < 3 || !strings.Contains(cells[1], "`") {
			continue
		}
		for _, part := range strings.Split(cells[1], "`") {
			part = strings.TrimSpace(part)
			if part == "" || part == "," {
				continue
			}
			pre, alts, ok := strings.Cut(part, "{")
			if !ok {
				out = append(out, part)
				continue
			}
			alts, _, _ = strings.Cut(alts, "}")
			for _, a := range strings.Split(alts, ",") {
				out = append(out, pre+a)
			}
		}
	}
	return out
}

// layoutCovers reports whether the Layout path p accounts for the package
// in dir: dir is p itself, or lies under a p that is a folder of packages
// rather than a package (loadtest, deploy/terraform), or is a test-helper
// package (its name ending in "test", as servertest) under p. A package
// under another package needs a row of its own.
func layoutCovers(p, dir string) bool {
	if dir == p {
		return true
	}
	if !under(dir, p) {
		return false
	}
	if strings.HasSuffix(filepath.Base(dir), "test") {
		return true
	}
	files, _ := filepath.Glob(filepath.Join(p, "*.go"))
	return len(files) == 0
}

// TestLayoutMatchesTree checks the README's Layout table against the
// tree: every path it names exists, and every Go package is accounted
// for by a path it names (layoutCovers).
func TestLayoutMatchesTree(t *testing.T) {
	paths := layoutPaths(t)
	if len(paths) < 10 {
		t.Fatalf("Layout table names %d paths: %v", len(paths), paths)
	}
	for _, p := range paths {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("Layout names %s, which is not in the tree: %v", p, err)
		}
	}
	for _, dir := range goPackages(t) {
		dir = filepath.ToSlash(dir)
		if dir == "." {
			continue // the root holds only the repository-wide tests and doc
		}
		covered := slices.ContainsFunc(paths, func(p string) bool { return layoutCovers(p, dir) })
		if !covered {
			t.Errorf("package %s is under no path of the README's Layout table", dir)
		}
	}
}

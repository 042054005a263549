package memlimit

import (
	"errors"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"runtime/debug"
	"testing"
)

// fakeTree writes files (path relative to a temp root: content) and
// returns the root.
func fakeTree(t *testing.T, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	for p, c := range files {
		full := filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

// keepLimit restores the process's Go memory limit when the test ends.
func keepLimit(t *testing.T) {
	prev := debug.SetMemoryLimit(-1)
	t.Cleanup(func() { debug.SetMemoryLimit(prev) })
}

func noEnv(string) string { return "" }

// frac is n times r as Apply computes it.
func frac(n int64, r float64) int64 { return int64(float64(n) * r) }

func TestApply(t *testing.T) {
	tests := []struct {
		name       string
		files      map[string]string
		env        string
		ratio      float64
		wantCgroup int64
		wantLimit  int64
		wantReason string
		wantSource string
	}{
		{"v2 own cgroup", map[string]string{"self": "0::/kubepods/pod1\n", "cg/kubepods/pod1/memory.max": "1073741824\n", "cg/memory.max": "max\n"},
			"", 0.9, 1 << 30, frac(1<<30, 0.9), "", "cg/kubepods/pod1/memory.max"},
		{"v2 at the root (a container's namespace)", map[string]string{"self": "0::/\n", "cg/memory.max": "2147483648\n"},
			"", 0.5, 2 << 30, 1 << 30, "", "cg/memory.max"},
		{"v2 without a limit", map[string]string{"self": "0::/\n", "cg/memory.max": "max\n"},
			"", 0.9, 0, 0, "no cgroup limit", "cg/memory.max"},
		{"v1 memory controller", map[string]string{"self": "12:cpu,cpuacct:/x\n5:memory:/docker/abc\n",
			"cg/memory/docker/abc/memory.limit_in_bytes": "536870912\n"}, "", 0.9, 512 << 20, frac(512<<20, 0.9), "", "cg/memory/docker/abc/memory.limit_in_bytes"},
		{"v1 unlimited", map[string]string{"self": "5:memory:/\n", "cg/memory/memory.limit_in_bytes": "9223372036854771712\n"},
			"", 0.9, 0, 0, "no cgroup limit", "cg/memory/memory.limit_in_bytes"},
		{"no cgroup files", map[string]string{"self": "0::/\n"}, "", 0.9, 0, 0, "no cgroup limit", ""},
		{"GOMEMLIMIT wins", map[string]string{"self": "0::/\n", "cg/memory.max": "1073741824\n"}, "500MiB", 0.9, 0, 0, "GOMEMLIMIT", ""},
		{"ratio 0 is off", map[string]string{"self": "0::/\n", "cg/memory.max": "1073741824\n"}, "", 0, 0, 0, "off", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			keepLimit(t)
			debug.SetMemoryLimit(math.MaxInt64)
			root := fakeTree(t, tc.files)
			cfg := Config{Ratio: tc.ratio, Root: filepath.Join(root, "cg"), SelfCgroup: filepath.Join(root, "self")}
			res, err := Apply(cfg, func(k string) string {
				if k == "GOMEMLIMIT" {
					return tc.env
				}
				return ""
			})
			if err != nil {
				t.Fatal(err)
			}
			wantSource := ""
			if tc.wantSource != "" {
				wantSource = filepath.Join(root, tc.wantSource)
			}
			if res.Cgroup != tc.wantCgroup || res.Limit != tc.wantLimit || res.Reason != tc.wantReason || res.Source != wantSource {
				t.Fatalf("got %+v, want cgroup %d, limit %d, reason %q, source %q", res, tc.wantCgroup, tc.wantLimit, tc.wantReason, wantSource)
			}
			want := tc.wantLimit
			if want == 0 {
				want = math.MaxInt64 // untouched
			}
			if got := debug.SetMemoryLimit(-1); got != want {
				t.Fatalf("runtime memory limit: got %d, want %d", got, want)
			}
		})
	}
}

func TestApplyRefusesBadInput(t *testing.T) {
	keepLimit(t)
	root := fakeTree(t, map[string]string{"self": "0::/\n", "cg/memory.max": "lots\n"})
	if _, err := Apply(Config{Ratio: 0.9, Root: filepath.Join(root, "cg"), SelfCgroup: filepath.Join(root, "self")}, noEnv); err == nil {
		t.Fatal("a limit file that is not a number: got no error")
	}
	for _, r := range []float64{-0.1, 1.5, math.NaN()} {
		if _, err := Apply(Config{Ratio: r}, noEnv); !errors.Is(err, ErrConfig) {
			t.Errorf("ratio %v: got %v, want ErrConfig", r, err)
		}
	}
}

// FuzzParseLimit checks that any limit file's content parses to a
// non-negative count or an error, never a panic.
func FuzzParseLimit(f *testing.F) {
	for _, s := range []string{"max\n", "1073741824\n", "9223372036854771712", "", "-1", "0", " 42 "} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		n, err := parseLimit(data)
		if err == nil && (n < 0 || n >= v1Unlimited) {
			t.Fatalf("parseLimit(%q) = %d", data, n)
		}
	})
}

// FuzzOwnCgroups checks that any /proc/self/cgroup content is read
// without a panic.
func FuzzOwnCgroups(f *testing.F) {
	for _, s := range []string{"0::/\n", "5:memory:/docker/x\n0::/a\n", "::\n", "1:name=systemd:/x"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		p := filepath.Join(t.TempDir(), "self")
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		ownCgroups(p)
	})
}

// TestSetupRefusesABadRatio checks the entry point the daemons call.
func TestSetupRefusesABadRatio(t *testing.T) {
	keepLimit(t)
	if err := Setup(2, slog.New(slog.DiscardHandler)); !errors.Is(err, ErrConfig) {
		t.Fatalf("ratio 2: got %v, want ErrConfig", err)
	}
	if err := Setup(0, slog.New(slog.DiscardHandler)); err != nil {
		t.Fatalf("ratio 0 (off): got %v", err)
	}
}

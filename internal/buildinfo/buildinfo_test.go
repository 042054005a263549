package buildinfo

import (
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
)

func TestFromBuild(t *testing.T) {
	toolchain := &debug.BuildInfo{
		GoVersion: "go1.26.8",
		Main:      debug.Module{Path: "github.com/cellrouter/cellrouter", Version: "v0.0.0-20261101120000-0123456789ab+dirty"},
		Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: "0123456789abcdef"},
			{Key: "vcs.modified", Value: "true"},
		},
	}
	devel := &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"}}
	tests := []struct {
		name       string
		bi         *debug.BuildInfo
		stampV     string
		stampR     string
		wantV      string
		wantR      string
		wantModify bool
	}{
		{"stamped wins", toolchain, "v1.2.0-3-gabcdef0", "abcdef0123", "v1.2.0-3-gabcdef0", "abcdef0123", false},
		{"stamped version, toolchain revision", toolchain, "v1.2.0", "", "v1.2.0", "0123456789abcdef", false},
		{"toolchain only", toolchain, "", "", "v0.0.0-20261101120000-0123456789ab+dirty", "0123456789abcdef", true},
		{"devel build", devel, "", "", Devel, "", false},
		{"no build info", nil, "", "", Devel, "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := fromBuild(tt.bi, tt.stampV, tt.stampR)
			if got.Version != tt.wantV || got.Revision != tt.wantR || got.Modified != tt.wantModify {
				t.Errorf("got version %q revision %q modified %v, want %q %q %v",
					got.Version, got.Revision, got.Modified, tt.wantV, tt.wantR, tt.wantModify)
			}
			if got.Platform != runtime.GOOS+"/"+runtime.GOARCH {
				t.Errorf("got platform %q, want %s/%s", got.Platform, runtime.GOOS, runtime.GOARCH)
			}
		})
	}
}

func TestString(t *testing.T) {
	tests := []struct {
		info Info
		want string
	}{
		{Info{Version: "v1.2.0", Revision: "abc", GoVersion: "go1.26.8", Platform: "linux/amd64"},
			"celld v1.2.0 (revision abc, go1.26.8, linux/amd64)"},
		{Info{Version: Devel, Modified: true, GoVersion: "go1.26.8", Platform: "linux/arm64"},
			"celld devel (revision unknown, modified, go1.26.8, linux/arm64)"},
	}
	for _, tt := range tests {
		if got := tt.info.String("celld"); got != tt.want {
			t.Errorf("String() got %q, want %q", got, tt.want)
		}
	}
}

// TestReadInTests checks the live path: a test binary is not stamped, so
// the version is the toolchain's record or Devel, never empty.
func TestReadInTests(t *testing.T) {
	got := Read()
	if got.Version == "" || !strings.HasPrefix(got.GoVersion, "go") {
		t.Errorf("Read() got %+v, want a version and a Go version", got)
	}
}

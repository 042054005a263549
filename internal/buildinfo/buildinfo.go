package buildinfo

import (
	"fmt"
	"runtime"
	"runtime/debug"
)

// Set at link time with -ldflags "-X ...buildinfo.version=... -X
// ...buildinfo.revision=..."; empty when the build did not stamp them.
var (
	version  string
	revision string
)

// Devel is the version of a build that was neither stamped nor versioned by
// the Go toolchain.
const Devel = "devel"

// Info is one binary's build.
type Info struct {
	// Version is the release version (git describe), or Devel.
	Version string
	// Revision is the commit the binary was built from; empty when unknown.
	Revision string
	// Modified reports a build from a tree with uncommitted changes, as the
	// Go toolchain recorded it (stamped builds carry "-dirty" in Version
	// instead).
	Modified bool
	// GoVersion is the toolchain that built the binary.
	GoVersion string
	// Platform is GOOS/GOARCH.
	Platform string
}

// Read returns the running binary's build.
func Read() Info {
	bi, _ := debug.ReadBuildInfo()
	return fromBuild(bi, version, revision)
}

// fromBuild combines the link-time stamps with the toolchain's record bi
// (nil when the binary carries none); stamps win.
func fromBuild(bi *debug.BuildInfo, stampedVersion, stampedRevision string) Info {
	info := Info{Version: stampedVersion, Revision: stampedRevision, GoVersion: runtime.Version(),
		Platform: runtime.GOOS + "/" + runtime.GOARCH}
	if bi != nil {
		if bi.GoVersion != "" {
			info.GoVersion = bi.GoVersion
		}
		if info.Version == "" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			info.Version = bi.Main.Version
		}
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				if info.Revision == "" {
					info.Revision = s.Value
				}
			case "vcs.modified":
				info.Modified = s.Value == "true" && stampedVersion == ""
			}
		}
	}
	if info.Version == "" {
		info.Version = Devel
	}
	return info
}

// String formats the build for a --version line of program, e.g.
// "celld v1.2.0 (revision 0123abcd..., go1.26.8, linux/amd64)".
func (i Info) String(program string) string {
	rev := i.Revision
	if rev == "" {
		rev = "unknown"
	}
	if i.Modified {
		rev += ", modified"
	}
	return fmt.Sprintf("%s %s (revision %s, %s, %s)", program, i.Version, rev, i.GoVersion, i.Platform)
}

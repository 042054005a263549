package snapshot

import (
	"strings"
	"testing"
	"time"
)

// FuzzFileOwner: any (cell, replica) names its files so that the name
// parses back to its owner and no other owner's prune pattern matches
// it; any file name parses without panicking.
func FuzzFileOwner(f *testing.F) {
	f.Add("cell-a", "r0", "snapshot-00000000001000000000@cell-a+r0.snap")
	f.Add("a+b", "@", "snapshot-00000000001000000000.snap")
	f.Add("", "", "snapshot-0000000000100000000x@.snap")
	f.Fuzz(func(t *testing.T, cell, replica, name string) {
		fileOwner(name)
		o := Owner(cell, replica)
		got, ok := fileOwner(FileName(time.Unix(0, 42), o))
		if !ok || got != o {
			t.Fatalf("Owner(%q, %q) = %q parses back as %q %v", cell, replica, o, got, ok)
		}
		if strings.ContainsAny(o, "@./*?[]\\") {
			t.Fatalf("Owner(%q, %q) = %q has a separator or glob character", cell, replica, o)
		}
	})
}

// FuzzParseHolder: a lock file's contents, whatever they are, give a
// one-line description that names the pid only when the file has one.
func FuzzParseHolder(f *testing.F) {
	f.Add([]byte("pid=12\ncell=cell-a\nreplica=r0\nhost=h\nsince=2026-11-27T09:00:00Z\n"))
	f.Add([]byte("pid=x\n"))
	f.Add([]byte("cell=a\nreplica=\"\n\npid=-1"))
	f.Fuzz(func(t *testing.T, data []byte) {
		d := parseHolder(data)
		if strings.Contains(d, "\n") {
			t.Fatalf("description %q spans lines", d)
		}
		if !strings.Contains(string(data), "pid=") && d != "an unknown process" {
			t.Fatalf("no pid in %q, yet described as %q", data, d)
		}
	})
}

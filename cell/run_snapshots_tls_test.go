package cell

import (
	"context"
	"reflect"
	"strings"
	"testing"

	"github.com/cellrouter/cellrouter/internal/auth"
	"github.com/cellrouter/cellrouter/internal/servers/servertest"
	"github.com/cellrouter/cellrouter/internal/tlsconf/tlstest"
)

// TestBootstrapOverMutualTLS bootstraps a replica from a cell whose
// servers require client certificates: the replica presents its own
// certificate of the tier's CA with the cell role, as a peer, and gets the
// snapshot; one whose certificate names no role (global by default: the
// hand-off and the probe, not the snapshot) or is of another CA is refused
// and starts empty.
func TestBootstrapOverMutualTLS(t *testing.T) {
	dir := t.TempDir()
	ca, intruder := tlstest.NewCA(t, "tier"), tlstest.NewCA(t, "intruder")
	cfg := withPods(testConfig(), "pod-t")
	cfg.TLS.Config = ca.Files(t, dir, "cell-a", tlstest.Options{})
	a, _ := runCell(t, cfg, nil)
	ctx := context.Background()
	for i := 0; i < 200; i++ {
		b := chainBatch(i)
		b.Pod, b.Seq = "pod-t", uint64(i)
		if err := a.Applier().ApplyBatch(ctx, b); err != nil {
			t.Fatal(err)
		}
	}
	want := indexContents(t, a.Index())

	rc := testConfig()
	rc.TLS.Config = ca.Files(t, dir, "cell-b", tlstest.Options{URIs: []string{auth.RoleURI(auth.RoleCell)}})
	rc.Snapshot.BootstrapFrom = a.GRPCAddr()
	b, _ := runCell(t, rc, nil)
	if got := indexContents(t, b.Index()); !reflect.DeepEqual(got, want) {
		t.Fatalf("bootstrapped over mTLS: %d blocks, want %d", len(got), len(want))
	}

	rc.TLS.Config = ca.Files(t, dir, "cell-c", tlstest.Options{})
	var roleless servertest.LogBuffer
	if c, _ := runCell(t, rc, &roleless); c.Index().Stats().Blocks != 0 || !strings.Contains(roleless.String(), "PermissionDenied") {
		t.Fatalf("a replica whose certificate names no role holds %d blocks, want an empty start refused with PermissionDenied: %s",
			c.Index().Stats().Blocks, roleless.String())
	}

	oc := intruder.Files(t, dir, "intruder", tlstest.Options{})
	oc.CAFile = rc.TLS.CAFile
	rc.TLS.Config = oc
	var logs servertest.LogBuffer
	c, _ := runCell(t, rc, &logs)
	if n := c.Index().Stats().Blocks; n != 0 {
		t.Fatalf("a replica of another CA holds %d blocks, want an empty start", n)
	}
	if !strings.Contains(logs.String(), "bootstrap from a replica failed") {
		t.Fatalf("log lacks the failure: %s", logs.String())
	}
}

package global

import (
	"testing"

	"github.com/cellrouter/cellrouter/gossip"
)

// TestDirectoryCarriesTheLightestPods: the load a cell gossips reaches the
// global tier's view of it whole, its lightest pods included.
func TestDirectoryCarriesTheLightestPods(t *testing.T) {
	tab := gossip.NewTable(nil)
	tab.SetMember(gossip.Member{Name: "na", Role: gossip.RoleCell, CellID: "a", HTTPAddr: "127.0.0.1:1", GRPCAddr: "127.0.0.1:2"})
	l := gossip.Load{ActiveRequests: 3, ActiveBlocks: 700, FreeBlocks: 9000, Pods: 4}
	l.SetLightest([]int{400, 0, 100, 200})
	if _, err := tab.ApplyHeader(&gossip.Header{Cell: "a", Node: "na", Epoch: 1, Seq: 1, Load: l}); err != nil {
		t.Fatal(err)
	}
	views := NewGossipDirectory(tab).Cells()
	if len(views) != 1 {
		t.Fatalf("%d views, want 1", len(views))
	}
	want := CellLoad{ActiveRequests: 3, ActiveBlocks: 700, FreeBlocks: 9000, Pods: 4, LeastPodBlocks: 0,
		Lightest: [gossip.LightestPods]int{0, 100, 200, 400}, NLightest: 4}
	if got := views[0].Load; got != want {
		t.Fatalf("view load %+v, want %+v", got, want)
	}
}

package global

import (
	"context"
	"sync"
	"testing"

	globalv1 "github.com/cellrouter/cellrouter/api/global/v1"
	"github.com/cellrouter/cellrouter/cell"
)

// TestGatewayInView checks that a real cell's gossip.gateway_address
// reaches a real globald through the pool: its views and ListCells show
// it on the cell's endpoint, and a cell without one shows none.
func TestGatewayInView(t *testing.T) {
	hits := &sync.Map{}
	g := startDaemon(t)
	startPoolReplicaWith(t, "cell-a", "r0", g.GossipAddr(), hits, func(c *cell.Config) { c.Gossip.GatewayAddress = "127.0.0.1:18081" })
	startPoolCell(t, "cell-b", g.GossipAddr(), hits)
	waitFor(t, "both cells", func() bool { return knows(g, "cell-a", "cell-b") })
	resp, err := (&service{rt: g.rt, g: g.Global}).ListCells(context.Background(), &globalv1.ListCellsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string][]string{}
	for _, c := range resp.GetCells() {
		for _, e := range c.GetEndpoints() {
			got[c.GetId()] = append(got[c.GetId()], e.GetGatewayAddr())
		}
	}
	if len(got["cell-a"]) != 1 || got["cell-a"][0] != "127.0.0.1:18081" || len(got["cell-b"]) != 1 || got["cell-b"][0] != "" {
		t.Fatalf("ListCells gateways = %v, want cell-a's 127.0.0.1:18081 and none for cell-b", got)
	}
	for _, v := range g.Router().views() {
		if want := map[string]string{"cell-a": "127.0.0.1:18081"}[v.ID]; v.GatewayAddr != want {
			t.Errorf("view of %s has gateway %q, want %q", v.ID, v.GatewayAddr, want)
		}
	}
}

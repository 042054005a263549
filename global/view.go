package global

import (
	"slices"
	"time"

	"github.com/cellrouter/cellrouter/cachekey/blockhash"
	"github.com/cellrouter/cellrouter/gossip"
)

// Estimator estimates how many leading blocks of a chain a cell may hold:
// a gossiped summary. It must be safe for concurrent use.
type Estimator interface {
	Depth(chain []blockhash.Hash) int
}

// CellLoad is a cell's load as it gossips it (gossip.Load). Its
// LeastPodBlocks is the load term of the cheapest pod the cell could offer
// a request that holds none of its prefix, and its Lightest pods are what
// lets the global tier follow the cell's least loaded pod through a burst
// of requests faster than gossip (see Routed).
type CellLoad gossip.Load

// Routed updates the load after the global tier sent a request of blocks
// blocks to the cell, whose pick had pickLoad active blocks (its probe
// answer), or -1 when no probe said (a lone candidate handed off unprobed).
//
// With the cell's lightest pods and a known pick, the update follows the
// cell: a pick no more loaded than the most loaded of the lightest pods is
// one of them, so that pod's load grows by the request and the list is
// sorted again, and the next decision sees the cell's next least loaded
// pod. Which entry is the pick's: the one with its load, or else (its
// load fell since the cell gossiped, as requests ended) the least loaded
// one above it. A pick more loaded than all of them (a pod chosen for its
// prefix) leaves them as they are. Otherwise the least loaded pod's
// load is raised by the request's share over the cell's pods (blocks/Pods,
// rounded up), the expected rise while the cell's picker spreads requests
// over its pods. Raising it by the whole request would make one request to
// a cell of idle pods look like a busy cell and send the next turn of the
// same session elsewhere (measured: it cost the agents workload 5% of its
// reuse at the trace's pace). Without a pod count the least loaded pod is
// left as gossiped.
func (l *CellLoad) Routed(blocks, pickLoad int) {
	l.ActiveRequests++
	l.ActiveBlocks += blocks
	l.FreeBlocks = max(0, l.FreeBlocks-blocks)
	if l.NLightest > 0 && pickLoad >= 0 {
		light := l.Lightest[:l.NLightest]
		j, _ := slices.BinarySearch(light, pickLoad)
		if j == len(light) {
			return
		}
		light[j] = pickLoad + blocks
		for ; j+1 < len(light) && light[j] > light[j+1]; j++ {
			light[j], light[j+1] = light[j+1], light[j]
		}
		l.LeastPodBlocks = light[0]
		return
	}
	if l.Pods > 0 {
		share := (blocks + l.Pods - 1) / l.Pods
		l.LeastPodBlocks += share
		for j := range l.NLightest {
			l.Lightest[j] += share
		}
	}
}

// Endpoint is one live replica of a cell: a celld serving its id.
type Endpoint struct {
	// Name is the replica's gossip node name; HTTPAddr takes requests;
	// GRPCAddr takes probes.
	Name, HTTPAddr, GRPCAddr string
	// GatewayAddr is where the gateway that uses the replica as its
	// endpoint picker takes requests (empty: none); the global tier's
	// endpoint picker answers with it.
	GatewayAddr string
}

// CellView is what the global router knows of one cell when it decides.
type CellView struct {
	// ID names the cell; HTTPAddr takes requests; GRPCAddr takes probes;
	// GatewayAddr is its gateway's (those of one replica, the one whose
	// summary is held).
	ID, HTTPAddr, GRPCAddr, GatewayAddr string
	// Endpoints are the cell's live replicas sorted by name; empty means
	// the one at HTTPAddr and GRPCAddr (a static directory).
	Endpoints []Endpoint
	// Alive is memberlist's view; Draining is the operator's.
	Alive, Draining bool
	// Summary is the cell's latest summary (nil until one arrived).
	Summary Estimator
	// SummaryGen and SummaryAge say how fresh the summary is.
	SummaryGen uint64
	SummaryAge time.Duration
	// SummaryBytes is the summary's size.
	SummaryBytes int
	// Load rides along with the summary; its Waits (per priority band)
	// were announced at WaitsAt (zero: never; see BandsConfig.MaxAge).
	Load    CellLoad
	WaitsAt time.Time
	// Models lists every model the cell serves, nil when the cell does not
	// know (see Router.ModelServed).
	Models ModelSet
}

// usable reports whether the cell may take new requests.
func (v *CellView) usable() bool { return v.Alive && !v.Draining && v.HTTPAddr != "" }

// Directory is the source of cell views: the gossip table in globald, a
// fixed list in tests. Cells returns a snapshot that nobody modifies (the
// router copies it before marking draining cells), so a directory may hand
// out the same slice until its contents change.
type Directory interface {
	Cells() []CellView
}

// StaticDirectory is a fixed list of cells.
type StaticDirectory []CellView

// Cells implements Directory.
func (d StaticDirectory) Cells() []CellView { return d }

// endpoints returns the cell's replicas: its Endpoints, or the one its
// addresses name.
func (v *CellView) endpoints() []Endpoint {
	if len(v.Endpoints) > 0 {
		return v.Endpoints
	}
	return []Endpoint{{Name: v.ID, HTTPAddr: v.HTTPAddr, GRPCAddr: v.GRPCAddr, GatewayAddr: v.GatewayAddr}}
}

// rotated returns v's endpoints starting at the k-th (mod their count):
// round robin over the replicas when k counts requests.
func (v *CellView) rotated(k uint64) []Endpoint {
	eps := v.endpoints()
	if len(eps) == 1 {
		return eps
	}
	i := int(k % uint64(len(eps)))
	out := make([]Endpoint, 0, len(eps))
	out = append(out, eps[i:]...)
	return append(out, eps[:i]...)
}

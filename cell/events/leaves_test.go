package events

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/cellrouter/cellrouter/cell/index"
)

// lruModel is the naive model of a holder's eviction order: every block
// with its parent and stamp, and eviction by scanning every leaf for the
// oldest stamp.
type lruModel struct {
	clock   uint64
	parent  map[uint64]uint64 // 0: a first block
	stamp   map[uint64]uint64
	matched map[uint64]bool // blocks marked matched, not yet restamped
}

func (m *lruModel) add(h, parent uint64) {
	m.clock++
	m.parent[h], m.stamp[h] = parent, m.clock
}

func (m *lruModel) touch(h uint64) {
	m.clock++
	m.stamp[h] = m.clock
}

// remove removes h and its descendants; h's parent takes the subtree's
// newest stamp.
func (m *lruModel) remove(h uint64) {
	var newest uint64
	var walk func(x uint64)
	walk = func(x uint64) {
		for c, p := range m.parent {
			if p == x {
				walk(c)
			}
		}
		delete(m.matched, x) // the forest keeps the mark, but no later block has its hash
		newest = max(newest, m.stamp[x])
		delete(m.parent, x)
		delete(m.stamp, x)
	}
	p := m.parent[h]
	walk(h)
	if p != 0 {
		m.stamp[p] = max(m.stamp[p], newest)
	}
}

// victim returns the block to evict: the oldest leaf, after restamping
// (once) each oldest leaf marked matched; 0 when empty.
func (m *lruModel) victim() uint64 {
	for {
		h := m.oldestLeaf()
		if h == 0 || !m.matched[h] {
			return h
		}
		delete(m.matched, h)
		m.touch(h)
	}
}

// oldestLeaf returns the leaf with the oldest stamp, 0 when empty.
func (m *lruModel) oldestLeaf() uint64 {
	inner := map[uint64]bool{}
	for _, p := range m.parent {
		inner[p] = true
	}
	var best uint64
	for h := range m.parent {
		if !inner[h] && (best == 0 || m.stamp[h] < m.stamp[best]) {
			best = h
		}
	}
	return best
}

// TestEvictionMatchesReferenceModel drives a forest (chains) and the naive
// model with the same random adds, touches (a store again or a match),
// removals of subtrees and evictions, and compares every evicted block and
// then the blocks that remain, with their stamps.
func TestEvictionMatchesReferenceModel(t *testing.T) {
	for seed := uint64(1); seed <= 20; seed++ {
		rng := rand.New(rand.NewPCG(seed, 7))
		var c chains
		m := &lruModel{parent: map[uint64]uint64{}, stamp: map[uint64]uint64{}, matched: map[uint64]bool{}}
		// Each block completes one router block, whose hash (routerOf) a
		// match marks.
		routerOf := func(h uint64) index.BlockHash { return index.BlockHash(h*0x9E3779B97F4A7C15 | 1) }
		next := uint64(1)
		var live []uint64
		pick := func() uint64 { return live[rng.IntN(len(live))] }
		sync := func() {
			live = live[:0]
			for h := range m.parent {
				live = append(live, h)
			}
			slices.Sort(live)
		}
		for step := 0; step < 3000; step++ {
			switch op := rng.IntN(12); {
			case op < 4 || len(live) == 0: // store a block, under a parent or not
				parent, pn := uint64(0), none
				if len(live) > 0 && rng.IntN(4) > 0 {
					parent = pick()
					pn, _ = c.lookup(parent)
					c.touch(pn) // stored () names its parent: touched
					m.touch(parent)
				}
				n := c.add(next, pn)
				c.node(n).nRouter, c.node(n).router0 = 1, routerOf(next)
				m.add(next, parent)
				next++
			case op < 5: // stored again
				h := pick()
				n, _ := c.lookup(h)
				c.touch(n)
				m.touch(h)
			case op < 6: // matched by a routed request
				h := pick()
				c.noteMatched(routerOf(h))
				m.matched[h] = true
			case op < 7: // an engine removal
				h := pick()
				n, _ := c.lookup(h)
				c.removeSubtree(n, nil, 0)
				m.remove(h)
			default: // an eviction
				want := m.victim()
				n := c.victim(none)
				if got := c.node(n).hash; got != want {
					t.Fatalf("seed %d step %d: evicts %d, model %d", seed, step, got, want)
				}
				c.removeSubtree(n, nil, 0)
				m.remove(want)
			}
			sync()
			if c.len() != len(m.parent) {
				t.Fatalf("seed %d step %d: %d blocks, model %d", seed, step, c.len(), len(m.parent))
			}
		}
		for h, st := range m.stamp {
			n, ok := c.lookup(h)
			if !ok {
				t.Fatalf("seed %d: block %d missing", seed, h)
			}
			if got := c.node(n).stamp; got != st {
				t.Errorf("seed %d: block %d stamp %d, model %d", seed, h, got, st)
			}
			wantParent := m.parent[h]
			gotParent := uint64(0)
			if p := c.node(n).parent; p != none {
				gotParent = c.node(p).hash
			}
			if gotParent != wantParent {
				t.Errorf("seed %d: block %d parent %d, model %d", seed, h, gotParent, wantParent)
			}
		}
	}
}

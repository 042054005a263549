package index

import (
	"sync"
	"sync/atomic"
)

// sweeper is the index's one background goroutine. It owns phase 2 of pod
// removal: it collects every slot killed since its last pass and clears them
// all in one pass over the shards, with at most Config.SweepWorkers shards
// locked at a time. Close stops it after the pending passes.
type sweeper struct {
	mu      sync.Mutex
	cond    *sync.Cond
	pending HostBitmap
	busy    bool
	closed  bool
	done    chan struct{}
	passes  atomic.Uint64
}

func (sw *sweeper) start(ix *Index) {
	sw.cond = sync.NewCond(&sw.mu)
	sw.done = make(chan struct{})
	go sw.run(ix)
}

func (sw *sweeper) enqueue(s Slot) {
	sw.mu.Lock()
	sw.pending = sw.pending.Set(s)
	sw.cond.Broadcast()
	sw.mu.Unlock()
}

func (sw *sweeper) run(ix *Index) {
	defer close(sw.done)
	sw.mu.Lock()
	for {
		for sw.pending.IsEmpty() && !sw.closed {
			sw.cond.Wait()
		}
		if sw.pending.IsEmpty() && sw.closed {
			sw.mu.Unlock()
			return
		}
		dead := sw.pending
		sw.pending = HostBitmap{}
		sw.busy = true
		sw.mu.Unlock()

		dead.ForEach(func(s Slot) { ix.tiers[s].reset() })
		ix.sweepShards(dead)
		ix.pods.freeSlots(dead)
		sw.passes.Add(1)

		sw.mu.Lock()
		sw.busy = false
		sw.cond.Broadcast()
	}
}

func (sw *sweeper) stop() {
	sw.mu.Lock()
	if sw.closed {
		sw.mu.Unlock()
		<-sw.done
		return
	}
	sw.closed = true
	sw.cond.Broadcast()
	sw.mu.Unlock()
	<-sw.done
}

// WaitSweeps blocks until every pod killed before the call has been swept
// and its slot freed.
func (ix *Index) WaitSweeps() {
	sw := &ix.sweep
	sw.mu.Lock()
	for (!sw.pending.IsEmpty() || sw.busy) && !sw.closed {
		sw.cond.Wait()
	}
	sw.mu.Unlock()
}

// sweepShards clears the slots in dead from every shard, SweepWorkers shards
// at a time, and returns when all are done.
func (ix *Index) sweepShards(dead HostBitmap) {
	var next atomic.Int32
	var wg sync.WaitGroup
	for w := 0; w < ix.cfg.SweepWorkers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= numShards {
					return
				}
				s := ix.base(i)
				s.beginWrite()
				var deleted int
				if ix.pshards != nil {
					deleted = ix.pshards[i].sweep(dead)
				} else {
					deleted = ix.shards[i].sweep(dead)
				}
				s.endWrite()
				ix.blocks.Add(-int64(deleted))
			}
		}()
	}
	wg.Wait()
}

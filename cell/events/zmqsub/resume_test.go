package zmqsub

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	"github.com/cellrouter/cellrouter/cell/events/vllmwire"
	"github.com/cellrouter/cellrouter/cell/snapshot"
)

// restoreCell returns a fresh cell holding a snapshot of c, as a celld
// restarted from its snapshot would.
func restoreCell(t *testing.T, c *cell) *cell {
	t.Helper()
	id := snapshot.Identity{CellID: "zmq", BlockSize: 16}
	var buf bytes.Buffer
	if _, err := snapshot.Write(&buf, id, snapshot.Source{Index: c.ix, Applier: c.a}, time.Now()); err != nil {
		t.Fatal(err)
	}
	snap, err := snapshot.Decode(buf.Bytes(), id)
	if err != nil {
		t.Fatal(err)
	}
	out := newCell(t)
	if _, err := snap.Restore(out.ix, out.a, time.Now()); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestSubscriberResumesFromSnapshot restarts the subscribing cell from a
// snapshot while the engine goes on: in every mode the restored holder is
// caught up from the number after the snapshot's, not from 0, so the
// applier neither clears it nor applies a batch twice.
func TestSubscriberResumesFromSnapshot(t *testing.T) {
	cases := []struct {
		name  string
		bind  bool
		eager bool // the endpoint names its pod: resumed at connection
	}{
		{"dial/lazy", false, false},
		{"dial/eager", false, true},
		{"bind/lazy", true, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t, tc.bind, vllmwire.FormArray, nil, nil)
			ref := newCell(t)
			w := newWorkload(8, 16)
			publishAll(t, r.pub, ref, testPod, testModel, w.batches(80))
			waitEqual(t, r.got, ref)

			r.stop()
			if !tc.bind {
				r.waitUnsubscribed()
			}
			restored := restoreCell(t, r.got)
			publishAll(t, r.pub, ref, testPod, testModel, w.batches(30))

			r.restartInto(restored, tc.eager)
			if tc.eager {
				waitEqual(t, r.got, ref) // before any new message
			}
			r.waitSubscribed()
			publishAll(t, r.pub, ref, testPod, testModel, w.batches(10))
			waitEqual(t, r.got, ref)
			ct := r.got.a.Counters()
			if got := ct.Batches.Load(); got != 40 {
				t.Errorf("batches applied after the restore: got %d, want 40 (%s)", got, r)
			}
			if ct.Restarts.Load() != 0 || ct.Clears.Load() != 0 {
				t.Errorf("restarts %d clears %d, want 0 (%s)", ct.Restarts.Load(), ct.Clears.Load(), r)
			}
			if tc.eager {
				// Resumed at connection. A lazy holder replays only when
				// its first live batch is not the next number (the PUB
				// socket may still deliver what it queued meanwhile).
				waitFor(t, func() string { return fmt.Sprintf("no resume counted (%s)", r) },
					func() bool { return r.sub.Counters().Resumes.Load() == 1 })
			}
		})
	}
}

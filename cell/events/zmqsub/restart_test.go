package zmqsub

import (
	"fmt"
	"testing"

	"github.com/cellrouter/cellrouter/cell/events/vllmwire"
)

func TestPublisherRestart(t *testing.T) {
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			r := newRig(t, m.bind, m.form, nil, nil)
			ref := newCell(t)
			w := newWorkload(4, 16)
			publishAll(t, r.pub, ref, testPod, testModel, w.batches(120))
			waitEqual(t, r.got, ref)

			// The engine dies and comes back on the same ports with an empty
			// cache, numbering from 0 again. Its first two batches are lost
			// (as when they are sent before the subscription reaches the new
			// socket), so only the sequence going backwards tells the cell.
			if err := r.pub.Close(); err != nil {
				t.Fatal(err)
			}
			r.pcfg.Skip = func(seq uint64) bool { return seq < 2 }
			r.startPub()
			r.waitSubscribed()
			publishAll(t, r.pub, ref, testPod, testModel, newWorkload(5, 16).batches(60))
			waitEqual(t, r.got, ref)
			if got := r.got.a.Counters().Restarts.Load(); got < 1 {
				t.Errorf("applier saw %d restarts, want at least 1 (%s)", got, r)
			}
		})
	}
}

func TestSubscriberRestart(t *testing.T) {
	cases := []struct {
		name  string
		bind  bool
		eager bool // the endpoint names its pod: catch up at connection
	}{
		{"dial/lazy", false, false},
		{"dial/eager", false, true},
		{"bind/lazy", true, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t, tc.bind, vllmwire.FormArray, nil, nil)
			ref := newCell(t)
			w := newWorkload(6, 16)
			publishAll(t, r.pub, ref, testPod, testModel, w.batches(100))
			waitEqual(t, r.got, ref)

			// The cell goes down; the engine goes on publishing.
			r.stop()
			if !tc.bind {
				r.waitUnsubscribed()
			}
			publishAll(t, r.pub, ref, testPod, testModel, w.batches(50))

			// A new cell starts with an empty index, on the same address in
			// bind mode so that the engine's socket reconnects to it.
			r.restartInto(newCell(t), tc.eager)
			if tc.eager {
				// Caught up before Ready, without a new message.
				waitEqual(t, r.got, ref)
			}
			// Otherwise the first message after the restart triggers the
			// catch-up from seq 0.
			r.waitSubscribed()
			publishAll(t, r.pub, ref, testPod, testModel, w.batches(20))
			waitEqual(t, r.got, ref)
			// The index can be complete a moment before the replay's end
			// marker is read and counted: wait for the counter.
			waitFor(t, func() string {
				return fmt.Sprintf("got %d successful replays, want at least the catch-up (%s)", r.sub.Counters().ReplaysSucceeded.Load(), r)
			}, func() bool { return r.sub.Counters().ReplaysSucceeded.Load() >= 1 })
		})
	}
}

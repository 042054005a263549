package load

import (
	"fmt"
	"testing"
	"time"
)

// BenchmarkTrackerLifecycle measures one request's bookkeeping on the
// proxy path: Start at the decision, FirstToken at the first byte, Done at
// the end, with 256 pods under load so the map lookups are realistic.
func BenchmarkTrackerLifecycle(b *testing.B) {
	t := NewTracker()
	pods := make([]string, 256)
	for i := range pods {
		pods[i] = fmt.Sprintf("pod-%03d", i)
		t.Start(pods[i], 10, 0, "") // keep every pod's entry alive
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		tk := t.Start(pods[i&255], 64, 48, "chat")
		t.FirstToken(tk)
		t.Done(tk)
	}
}

// BenchmarkTrackerParallel is the same lifecycle from every core at once:
// the tracker's one mutex is shared by all of a cell's in-flight requests.
func BenchmarkTrackerParallel(b *testing.B) {
	t := NewTracker()
	pods := make([]string, 256)
	for i := range pods {
		pods[i] = fmt.Sprintf("pod-%03d", i)
		t.Start(pods[i], 10, 0, "")
	}
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			tk := t.Start(pods[i&255], 64, 48, "chat")
			t.FirstToken(tk)
			t.Done(tk)
			i++
		}
	})
}

// BenchmarkRemoteLifecycle measures a peer replica's request applied here:
// its start, first token and done, as a Sharer applies them.
func BenchmarkRemoteLifecycle(b *testing.B) {
	t := NewTracker()
	pods := make([]string, 256)
	for i := range pods {
		pods[i] = fmt.Sprintf("pod-%03d", i)
		t.Start(pods[i], 10, 0, "")
	}
	now := time.Unix(0, 0)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		id := uint64(i + 1)
		t.ApplyRemote("cell/a/r2#1", Change{Op: OpStart, ID: id, Pod: pods[i&255], Blocks: 64, PrefillBlocks: 48, Template: "chat"}, now, time.Minute)
		t.ApplyRemote("cell/a/r2#1", Change{Op: OpFirstToken, ID: id}, now, time.Minute)
		t.ApplyRemote("cell/a/r2#1", Change{Op: OpDone, ID: id}, now, time.Minute)
	}
}

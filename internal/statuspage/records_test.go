package statuspage

import (
	"testing"
	"time"

	"github.com/cellrouter/cellrouter/internal/decisions"
)

func TestFromRing(t *testing.T) {
	if FromRing(nil, nil) != nil {
		t.Fatal("a disabled ring must give no source, so the page says so")
	}
	r := decisions.New(decisions.Config{Size: 4, TopK: 2})
	at := time.Unix(1700000000, 0)
	r.Add(decisions.Record{ID: "a", TraceID: "t1", Time: at, Tenant: "acme", Model: "m", Path: "exact", Cell: "c1", Pod: "p1", MatchedBlocks: 7, Status: 200, Duration: time.Second})
	r.Add(decisions.Record{ID: "b", Time: at.Add(time.Second), Model: "m", Path: "none", Status: 503})
	got := FromRing(r, func(rec decisions.Record) string { return rec.Pod })()
	if len(got) != 2 || got[0].ID != "b" || got[1].ID != "a" {
		t.Fatalf("want newest first [b a], got %+v", got)
	}
	if got[0].MatchedBlocks != -1 || got[0].Status != 503 {
		t.Errorf("a request routed nowhere: %+v", got[0])
	}
	want := Decision{ID: "a", TraceID: "t1", At: at, Tenant: "acme", Model: "m", Path: "exact", Target: "p1", MatchedBlocks: 7, Status: 200, Duration: time.Second}
	if got[1] != want {
		t.Errorf("got %+v, want %+v", got[1], want)
	}
}

package decisions

import (
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	cellv1 "github.com/cellrouter/cellrouter/api/cell/v1"
)

// TestRingAgainstReference drives rings of several sizes with random adds
// and lookups and checks every answer against a naive model: a slice of
// every record added, of which the ring must show the last Size, newest
// first.
func TestRingAgainstReference(t *testing.T) {
	for _, size := range []int{1, 2, 3, 7, 100} {
		t.Run(fmt.Sprint(size), func(t *testing.T) {
			r := New(Config{Size: size, TopK: 8})
			var all []Record
			rng := rand.New(rand.NewPCG(uint64(size), 9))
			for step := 0; step < 500; step++ {
				// Ids repeat now and then: Get must find the newest.
				rec := Record{ID: fmt.Sprintf("r%d", rng.IntN(300)), Status: step}
				r.Add(rec)
				all = append(all, rec)
				want := all[max(0, len(all)-size):]
				got := r.Recent()
				if len(got) != len(want) {
					t.Fatalf("step %d: got %d records, want %d", step, len(got), len(want))
				}
				for i := range got {
					if w := want[len(want)-1-i]; got[i].ID != w.ID || got[i].Status != w.Status {
						t.Fatalf("step %d: record %d: got %s/%d, want %s/%d", step, i, got[i].ID, got[i].Status, w.ID, w.Status)
					}
				}
				id := fmt.Sprintf("r%d", rng.IntN(300))
				rec, ok := r.Get(id)
				var wantRec Record
				wantOK := false
				for i := len(want) - 1; i >= 0; i-- {
					if want[i].ID == id {
						wantRec, wantOK = want[i], true
						break
					}
				}
				if ok != wantOK || rec.Status != wantRec.Status {
					t.Fatalf("step %d: Get(%s): got %v %d, want %v %d", step, id, ok, rec.Status, wantOK, wantRec.Status)
				}
			}
		})
	}
}

// TestRingDisabled checks that size 0 gives a nil ring that records
// nothing and answers an empty list.
func TestRingDisabled(t *testing.T) {
	r := New(Config{Size: 0, TopK: 8})
	if r != nil {
		t.Fatalf("New with size 0: got %v, want nil", r)
	}
	r.Add(Record{ID: "x"})
	if got := r.Recent(); got != nil {
		t.Errorf("Recent: got %v, want nil", got)
	}
	if _, ok := r.Get("x"); ok {
		t.Error("Get found a record in a disabled ring")
	}
	if r.TopK() != 0 {
		t.Errorf("TopK: got %d, want 0", r.TopK())
	}
	w := httptest.NewRecorder()
	r.ServeList(w, httptest.NewRequest("GET", "/v1/cell/decisions", nil))
	if w.Code != 200 || !strings.Contains(w.Body.String(), `"decisions": []`) || !strings.Contains(w.Body.String(), `"size": 0`) {
		t.Errorf("ServeList: got %d %s, want an empty list of size 0", w.Code, w.Body)
	}
}

// TestRingConcurrent adds and reads from many goroutines (run with -race)
// and checks the ring never holds more than its size and ends with the
// last record of each writer among the newest.
func TestRingConcurrent(t *testing.T) {
	const size, writers, each = 16, 8, 500
	r := New(Config{Size: size, TopK: 1})
	var wg sync.WaitGroup
	for w := 0; w < writers; w++ {
		wg.Add(2)
		go func() {
			defer wg.Done()
			for i := 0; i < each; i++ {
				r.Add(Record{ID: fmt.Sprintf("w%d-%d", w, i), Status: i})
			}
		}()
		go func() {
			defer wg.Done()
			for i := 0; i < each; i++ {
				if n := len(r.Recent()); n > size {
					t.Errorf("Recent: %d records, ring of %d", n, size)
					return
				}
				r.Get(fmt.Sprintf("w%d-%d", w, i))
			}
		}()
	}
	wg.Wait()
	got := r.Recent()
	if len(got) != size {
		t.Fatalf("after %d adds: %d records, want %d", writers*each, len(got), size)
	}
	seen := map[string]bool{}
	for _, rec := range got {
		if seen[rec.ID] {
			t.Errorf("record %s twice", rec.ID)
		}
		seen[rec.ID] = true
	}
}

// TestRecordJSON checks the shape GET /v1/<tier>/decisions serves: snake
// case fields, durations in milliseconds, the explanation in protojson
// with the proto files' field names.
func TestRecordJSON(t *testing.T) {
	rec := Record{ID: "req-1", TraceID: "0af7651916cd43dd8448eb211c80319c", Time: time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC),
		Tenant: "acme", Model: "m", Path: "exact", Cell: "cell-a", Pod: "pod-1", MatchedBlocks: 8, Blocks: 16, Status: 200,
		Decision: 1500 * time.Microsecond, Duration: 20 * time.Millisecond,
		Explanation: &cellv1.Explanation{TotalBlocks: 16, Pick: "pod-1", Passes: []*cellv1.ExplainPass{{Profile: "default",
			Pods: []*cellv1.ExplainPod{{Pod: "pod-1", Verdict: "kept", MatchedBlocks: 8, Rank: 1, Picked: true}}}}}}
	b, err := json.Marshal(rec)
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"id": "req-1", "trace_id": "0af7651916cd43dd8448eb211c80319c", "time": "2026-11-27T12:00:00Z",
		"tenant": "acme", "model": "m", "path": "exact", "cell": "cell-a", "pod": "pod-1", "matched_blocks": 8.0, "blocks": 16.0,
		"status": 200.0, "decision_ms": 1.5, "duration_ms": 20.0}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: got %v, want %v", k, got[k], v)
		}
	}
	x, _ := got["explanation"].(map[string]any)
	passes, _ := x["passes"].([]any)
	if x["pick"] != "pod-1" || len(passes) != 1 {
		t.Fatalf("explanation: got %s", b)
	}
	pod := passes[0].(map[string]any)["pods"].([]any)[0].(map[string]any)
	if pod["matched_blocks"] != 8.0 || pod["picked"] != true || pod["verdict"] != "kept" {
		t.Errorf("explained pod: got %v, want matched_blocks 8, picked, kept", pod)
	}
}

// TestServeOne checks GET .../decisions/{id}: the record, or a 404 in
// OpenAI's error shape.
func TestServeOne(t *testing.T) {
	r := New(DefaultConfig())
	r.Add(Record{ID: "abc", Model: "m", Status: 200})
	mux := http.NewServeMux()
	mux.HandleFunc("GET /d/{id}", r.ServeOne)
	for _, tt := range []struct {
		id, want string
		status   int
	}{
		{"abc", `"id": "abc"`, 200},
		{"nope", `"code":"not_found"`, 404},
	} {
		w := httptest.NewRecorder()
		mux.ServeHTTP(w, httptest.NewRequest("GET", "/d/"+tt.id, nil))
		if w.Code != tt.status || !strings.Contains(w.Body.String(), tt.want) {
			t.Errorf("%s: got %d %s, want %d with %s", tt.id, w.Code, w.Body, tt.status, tt.want)
		}
		if tt.status == 404 {
			var body struct {
				Error struct{ Message, Type, Param string } `json:"error"`
			}
			if err := json.Unmarshal(w.Body.Bytes(), &body); err != nil || body.Error.Type != "invalid_request_error" || body.Error.Param != "id" {
				t.Errorf("404 body: got %s (%v), want OpenAI's error shape", w.Body, err)
			}
		}
	}
}

func TestConfig(t *testing.T) {
	for _, tt := range []struct {
		c    Config
		want string
	}{
		{DefaultConfig(), ""},
		{Config{Size: 0, TopK: 0}, ""},
		{Config{Size: -1, TopK: 8}, "decisions.size -1"},
		{Config{Size: MaxSize + 1, TopK: 8}, fmt.Sprintf("decisions.size %d", MaxSize+1)},
		{Config{Size: 10, TopK: 0}, "decisions.top_k 0"},
	} {
		err := tt.c.Validate("decisions")
		if (err == nil) != (tt.want == "") || err != nil && !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Validate(%+v): got %v, want %q", tt.c, err, tt.want)
		}
	}
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	apply := BindFlags(fs, DefaultConfig())
	if err := fs.Parse([]string{"--decisions", "0"}); err != nil {
		t.Fatal(err)
	}
	c := Config{Size: 50, TopK: 3}
	apply(&c)
	if c != (Config{Size: 0, TopK: 3}) {
		t.Errorf("flags: got %+v, want size 0 and the file's top_k 3", c)
	}
}

// TestRequestID checks that a client's id is kept and a missing one is
// made up and set on the request.
func TestRequestID(t *testing.T) {
	r := httptest.NewRequest("POST", "/", nil)
	r.Header.Set(RequestIDHeader, "client-id")
	if got := RequestID(r); got != "client-id" {
		t.Errorf("got %q, want the client's", got)
	}
	r = httptest.NewRequest("POST", "/", nil)
	id := RequestID(r)
	if len(id) != 24 || r.Header.Get(RequestIDHeader) != id {
		t.Errorf("made up %q, header %q: want 24 hex digits set on the request", id, r.Header.Get(RequestIDHeader))
	}
}

// BenchmarkRingAdd is the cost of recording one decision.
func BenchmarkRingAdd(b *testing.B) {
	r := New(DefaultConfig())
	rec := Record{ID: "abc", Model: "m", Path: "exact"}
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		r.Add(rec)
	}
}

// FuzzServeOne feeds request ids (outside input, from the path) to
// GET .../decisions/{id}: the answer is always JSON, the record when the
// id is held and OpenAI's 404 otherwise, and never another record.
func FuzzServeOne(f *testing.F) {
	for _, s := range []string{"abc", "", "a/b", "%00", "req-1", strings.Repeat("x", 300), "\"><script>"} {
		f.Add(s)
	}
	r := New(DefaultConfig())
	r.Add(Record{ID: "abc", Model: "m"})
	r.Add(Record{ID: "req-1", Model: "n"})
	f.Fuzz(func(t *testing.T, id string) {
		req := httptest.NewRequest("GET", "/d/x", nil)
		req.SetPathValue("id", id)
		w := httptest.NewRecorder()
		r.ServeOne(w, req)
		var body map[string]any
		if err := json.Unmarshal(w.Body.Bytes(), &body); err != nil {
			t.Fatalf("id %q: body %q is not JSON: %v", id, w.Body, err)
		}
		_, held := r.Get(id)
		switch {
		case held && (w.Code != 200 || body["id"] != id):
			t.Fatalf("id %q: got %d %v, want its record", id, w.Code, body)
		case !held && (w.Code != 404 || body["error"] == nil):
			t.Fatalf("id %q: got %d %v, want a 404 error body", id, w.Code, body)
		}
	})
}

package global

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	cellv1 "github.com/cellrouter/cellrouter/api/cell/v1"
	"github.com/cellrouter/cellrouter/cachekey/blockhash"
	"github.com/cellrouter/cellrouter/cachekey/tokenizer"
	"github.com/cellrouter/cellrouter/cell"
	"github.com/cellrouter/cellrouter/gossip"
)

// instantProber answers every probe at once, so a benchmark measures the
// global decision without the probe round trip.
type instantProber struct{}

func (instantProber) Probe(_ context.Context, c *CellView, req *cellv1.RouteRequest) (*cellv1.RouteResponse, error) {
	return &cellv1.RouteResponse{Pick: &cellv1.Candidate{Pod: c.ID + "-p0", MatchedBlocks: 10, Load: 5}}, nil
}

// benchCells builds n cells whose summaries each hold blocksPerCell blocks
// of chains, with the benchmark's request prefixes spread over them.
func benchCells(b *testing.B, n, blocksPerCell int, reqs [][]uint32) []CellView {
	b.Helper()
	h := blockhash.DefaultHasher()
	seed := blockhash.Seed(blockhash.Keys{Model: "m"})
	rng := rand.New(rand.NewPCG(1, 1))
	views := make([]CellView, n)
	for i := range views {
		bld, err := gossip.NewBuilder(gossip.DefaultSummaryConfig())
		if err != nil {
			b.Fatal(err)
		}
		toks := make([]uint32, 1024*16)
		for added := 0; added < blocksPerCell; added += 1024 {
			for j := range toks {
				toks[j] = rng.Uint32() % 128000
			}
			for d, x := range h.Chain(seed, toks, nil) {
				bld.Add(x, d+1)
			}
		}
		for r, req := range reqs { // each request's prefix lives in a few cells
			if r%n == i || (r+7)%n == i {
				for d, x := range h.Chain(seed, req, nil)[:32+r%32] {
					bld.Add(x, d+1)
				}
			}
		}
		s := bld.Build()
		views[i] = CellView{ID: fmt.Sprintf("cell-%02d", i), HTTPAddr: "127.0.0.1:1", GRPCAddr: "127.0.0.1:2", Alive: true,
			Summary: s, SummaryBytes: s.SizeBytes(), Load: CellLoad{ActiveBlocks: rng.IntN(1000)}}
	}
	return views
}

// BenchmarkDecide times the global decision (hashing, summary search over
// 64 cells, the probe fan-out and the choice) with probes that answer at
// once; it reports the p99 of single decisions.
func BenchmarkDecide(b *testing.B) {
	var reqs [][]uint32
	for i := 0; i < 64; i++ {
		t := make([]uint32, 64*16)
		for j := range t {
			t[j] = uint32(i*100000 + j)
		}
		reqs = append(reqs, t)
	}
	views := benchCells(b, 64, 64<<10, reqs)
	cfg := DefaultConfig()
	rt, err := NewRouter(cfg, StaticDirectory(views), instantProber{})
	if err != nil {
		b.Fatal(err)
	}
	lat := make([]time.Duration, 0, b.N)
	probes := 0
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		start := time.Now()
		d, err := rt.Decide(context.Background(), &Request{Model: "m", TokenIDs: reqs[i%len(reqs)]})
		if err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(start))
		probes += len(d.Answers)
	}
	b.StopTimer()
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	b.ReportMetric(float64(lat[len(lat)/2].Nanoseconds()), "p50-ns")
	b.ReportMetric(float64(lat[len(lat)*99/100].Nanoseconds()), "p99-ns")
	b.ReportMetric(float64(probes)/float64(b.N), "probes/op")
}

// BenchmarkSearch times the pure summary search alone over 64 cells.
func BenchmarkSearch(b *testing.B) {
	req := make([]uint32, 64*16)
	for j := range req {
		req[j] = uint32(j)
	}
	views := benchCells(b, 64, 64<<10, [][]uint32{req})
	chain := blockhash.DefaultHasher().Chain(blockhash.Seed(blockhash.Keys{Model: "m"}), req, nil)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		Search(DefaultSearchConfig(), views, chain, 0)
	}
}

// BenchmarkTokenize times the global tier's tokenization of a prompt of
// about 1k tokens sharing its start with the others and ending in its own
// words: a text prompt and a chat (system message plus a question) in
// process, and the same through a cell's /tokenize (an in-process HTTP
// server with the same tokenizer), each request new so that no remote
// answer is cached.
func BenchmarkTokenize(b *testing.B) {
	tmpl, _ := tokenizer.ChatTemplateByName("chatml")
	ref, err := tokenizer.LoadFile(fixtureTokenizer, tokenizer.Options{ChatTemplate: tmpl})
	if err != nil {
		b.Fatal(err)
	}
	prefix := strings.Repeat("The router reads the prompt, turns it into tokens and hashes the tokens block by block. ", 40)
	fake := startFakeTokenizeCell(b, "cell", ref)
	for _, c := range []struct {
		name   string
		remote bool
		chat   bool
	}{{"local/text", false, false}, {"local/chat", false, true}, {"remote/text", true, false}, {"remote/chat", true, true}} {
		b.Run(c.name, func(b *testing.B) {
			cfg := DefaultTokenizeConfig()
			if !c.remote {
				cfg.Models = []ModelTokenizer{{Model: "m", File: fixtureTokenizer, ChatTemplate: "chatml"}}
			}
			tk, err := NewTokenizer(cfg)
			if err != nil {
				b.Fatal(err)
			}
			cells := []CellView{fake.view}
			req := func(i int) *Request {
				q := fmt.Sprintf("Request %d asks where it should go.", i)
				if c.chat {
					return &Request{Model: "m", Chat: true, Messages: []tokenizer.Message{{Role: "system", Content: prefix}, {Role: "user", Content: q}}}
				}
				return &Request{Model: "m", Prompt: prefix + q}
			}
			var dst []uint32
			dst, _, _ = tk.Tokenize(context.Background(), req(-1), cells, dst[:0])
			n := len(dst)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if dst, _, err = tk.Tokenize(context.Background(), req(i), cells, dst[:0]); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			b.ReportMetric(float64(n), "tokens/op")
		})
	}
}

// BenchmarkServeInference times one short non-streaming request through the
// whole path in one process over loopback: the global data plane (parse,
// hash, summary search, the probe or none, hand-off), a real cell (parse,
// decide, proxy) and an instant pod, with keep-alive connections. Its
// allocations are both routers' (and the client's and the pod's). The
// sub-benchmarks compare the lone-candidate hand-off with the probed one.
func BenchmarkServeInference(b *testing.B) {
	for _, probeLone := range []bool{false, true} {
		b.Run(fmt.Sprintf("probe_lone=%v", probeLone), func(b *testing.B) {
			benchServeInference(b, probeLone)
		})
	}
}

func benchServeInference(b *testing.B, probeLone bool) {
	hits := &sync.Map{}
	c := startTestCell(b, "cell-a", hits)
	toks := tokens(51, 64*16)
	c.hold(b, "cell-a-pod1", toks, 32)
	g := startGlobalWith(b, StaticDirectory{c.view(b)}, func(cfg *Config) { cfg.ProbeLone = probeLone })
	body, _ := json.Marshal(map[string]any{"model": "m", "prompt": toks, "max_tokens": 1})
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4}}
	defer client.CloseIdleConnections()
	url := "http://" + g.HTTPAddr() + "/v1/completions"
	send := func() {
		resp, err := client.Post(url, "application/json", bytes.NewReader(body))
		if err != nil {
			b.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			b.Fatalf("status %d", resp.StatusCode)
		}
	}
	for i := 0; i < 100; i++ { // connections and pools warm
		send()
	}
	lat := make([]time.Duration, 0, b.N)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		start := time.Now()
		send()
		lat = append(lat, time.Since(start))
	}
	b.StopTimer()
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	b.ReportMetric(float64(lat[len(lat)/2].Nanoseconds()), "p50-ns")
	b.ReportMetric(float64(lat[len(lat)*99/100].Nanoseconds()), "p99-ns")
}

// BenchmarkServeInferenceAccessLog is BenchmarkServeInference (the lone
// candidate's hand-off) with the access log of both tiers off and on (a
// text line per request at each tier, to a discarding writer): what the
// line costs a request.
func BenchmarkServeInferenceAccessLog(b *testing.B) {
	for _, on := range []bool{false, true} {
		b.Run(fmt.Sprintf("access_log=%v", on), func(b *testing.B) {
			hits := &sync.Map{}
			c := startTestCellWith(b, "cell-a", hits, func(cfg *cell.Config) { cfg.AccessLog.Enabled = on })
			toks := tokens(51, 64*16)
			c.hold(b, "cell-a-pod1", toks, 32)
			g := startGlobalWith(b, StaticDirectory{c.view(b)}, func(cfg *Config) { cfg.AccessLog.Enabled = on })
			body, _ := json.Marshal(map[string]any{"model": "m", "prompt": toks, "max_tokens": 1})
			client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4}}
			defer client.CloseIdleConnections()
			url := "http://" + g.HTTPAddr() + "/v1/completions"
			send := func() {
				resp, err := client.Post(url, "application/json", bytes.NewReader(body))
				if err != nil {
					b.Fatal(err)
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					b.Fatalf("status %d", resp.StatusCode)
				}
			}
			for i := 0; i < 100; i++ { // connections and pools warm
				send()
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				send()
			}
		})
	}
}

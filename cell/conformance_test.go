package cell

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/go-zeromq/zmq4"

	"github.com/cellrouter/cellrouter/cell/events/vllmpub"
	"github.com/cellrouter/cellrouter/cell/events/vllmwire"
)

// The conformance suite runs KV-event payloads in every shape vLLM and
// SGLang are documented to send (cell/testdata/conformance, encoded by an
// encoder other than ours) through a running cell's real ZMQ sockets, in
// dial and bind mode, and checks what a request finds through the dry-run
// route API, not only what the decoder returns.

type conformanceFile struct {
	Tokens   []uint32             `json:"tokens"`
	Fixtures []conformanceFixture `json:"fixtures"`
}

type conformanceFixture struct {
	Name    string   `json:"name"`
	About   string   `json:"about"`
	Batches []string `json:"batches"`
	Query   struct {
		Model string `json:"model"`
		Salt  string `json:"salt"`
	} `json:"query"`
	WantDepth int     `json:"want_depth"`
	Topic     *string `json:"topic"`
}

func loadConformance(t *testing.T) conformanceFile {
	t.Helper()
	data, err := os.ReadFile("testdata/conformance/fixtures.json")
	if err != nil {
		t.Fatal(err)
	}
	var f conformanceFile
	if err := json.Unmarshal(data, &f); err != nil {
		t.Fatal(err)
	}
	if len(f.Fixtures) == 0 || len(f.Tokens) == 0 {
		t.Fatal("no fixtures")
	}
	return f
}

func (fx *conformanceFixture) payloads(t *testing.T) [][]byte {
	t.Helper()
	var out [][]byte
	for i, h := range fx.Batches {
		p, err := hex.DecodeString(h)
		if err != nil {
			t.Fatalf("batch %d: %v", i, err)
		}
		out = append(out, p)
	}
	return out
}

// conformancePod is the pod every fixture is published for.
const conformancePod = "pod-c"

// conformanceConfig is the cell every fixture runs through: the pod (with
// an address, so that it is a routing candidate), model "m" by default.
func conformanceConfig() Config {
	cfg := testConfig()
	cfg.Events.DefaultModel = "m"
	cfg.Pods = []PodConfig{{ID: conformancePod, Address: "127.0.0.1:9"}}
	return cfg
}

// routeDepths asks the cell's dry-run route API for every pod's matched
// depth of tokens under model and cache salt.
func routeDepths(t *testing.T, c *Cell, model, salt string, tokens []uint32) map[string]int {
	t.Helper()
	req := map[string]any{"model": model, "tokenIds": tokens}
	if salt != "" {
		req["extraKeys"] = []string{salt}
	}
	body, _ := json.Marshal(req)
	resp, err := http.Post("http://"+c.HTTPAddr()+"/v1/cell/route", "application/json", strings.NewReader(string(body)))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out struct {
		Candidates []struct {
			Pod           string `json:"pod"`
			MatchedBlocks int    `json:"matchedBlocks"`
		} `json:"candidates"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("route: status %d, %v", resp.StatusCode, err)
	}
	depths := map[string]int{}
	for _, c := range out.Candidates {
		depths[c.Pod] = c.MatchedBlocks
	}
	return depths
}

// handled returns how many batches the cell's applier applied or dropped.
func handled(c *Cell) uint64 {
	ct := c.Applier().Counters()
	n := ct.Batches.Load()
	for i := range ct.BatchesDropped {
		n += ct.BatchesDropped[i].Load()
	}
	return n
}

// checkFixtureResult waits until the cell handled n batches, then checks
// the depth a request finds and that no message was dropped as malformed.
func checkFixtureResult(t *testing.T, c *Cell, fx *conformanceFixture, tokens []uint32, n int) {
	t.Helper()
	waitFor(t, fmt.Sprintf("%d batches handled", n), func() bool { return handled(c) >= uint64(n) })
	st, err := c.state.GetCellState(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if st.GetTransportDropped() != 0 || st.GetEventsDroppedByReason()["invalid"] != 0 {
		t.Errorf("dropped: transport %v, events %v", st.GetTransportDroppedByReason(), st.GetEventsDroppedByReason())
	}
	if got := routeDepths(t, c, fx.Query.Model, fx.Query.Salt, tokens)[conformancePod]; got != fx.WantDepth {
		t.Errorf("%s: got matched depth %d, want %d", fx.About, got, fx.WantDepth)
	}
}

func TestConformance(t *testing.T) {
	f := loadConformance(t)
	for _, fx := range f.Fixtures {
		t.Run("dial/"+fx.Name, func(t *testing.T) {
			// The engine binds, the cell dials it as pod-c, and the engine
			// publishes on vLLM's default topic, the empty string.
			topic := ""
			if fx.Topic != nil {
				topic = *fx.Topic
			}
			pcfg := vllmpub.DefaultConfig("engine", "")
			pcfg.Topic = &topic
			pub, err := vllmpub.New(pcfg)
			if err != nil {
				t.Fatal(err)
			}
			defer pub.Close()
			cfg := conformanceConfig()
			cfg.Pods[0].ZMQEndpoint, cfg.Pods[0].ReplayEndpoint = pub.Endpoint(), pub.ReplayEndpoint()
			c := startCell(t, cfg)
			waitFor(t, "subscription", pub.Subscribed)
			for _, p := range fx.payloads(t) {
				if _, err := pub.PublishPayload(p); err != nil {
					t.Fatal(err)
				}
			}
			checkFixtureResult(t, c, &fx, f.Tokens, len(fx.Batches))
		})
		t.Run("bind/"+fx.Name, func(t *testing.T) {
			// The cell binds; the engine connects and names itself in its
			// topic.
			cfg := conformanceConfig()
			cfg.ZMQ.Bind = "tcp://127.0.0.1:0"
			c := startCell(t, cfg)
			waitFor(t, "bind", func() bool { return c.ZMQBindEndpoint() != "" })
			pcfg := vllmpub.DefaultConfig(conformancePod, "m")
			pcfg.Connect, pcfg.Endpoint = true, c.ZMQBindEndpoint()
			pub, err := vllmpub.New(pcfg)
			if err != nil {
				t.Fatal(err)
			}
			defer pub.Close()
			waitFor(t, "subscription", pub.Subscribed)
			for _, p := range fx.payloads(t) {
				if _, err := pub.PublishPayload(p); err != nil {
					t.Fatal(err)
				}
			}
			checkFixtureResult(t, c, &fx, f.Tokens, len(fx.Batches))
		})
	}
}

// TestConformanceReplayLayouts starts a cell after an engine published
// (nothing live reaches it): only the engine's replay socket can bring the
// blocks, in each layout replay sockets are seen to answer with.
func TestConformanceReplayLayouts(t *testing.T) {
	f := loadConformance(t)
	var fx *conformanceFixture
	for i := range f.Fixtures {
		if f.Fixtures[i].Name == "vllm_array_two_batches" {
			fx = &f.Fixtures[i]
		}
	}
	if fx == nil {
		t.Fatal("fixture vllm_array_two_batches missing")
	}
	end := vllmwire.EncodeSeq(vllmwire.ReplayEndSeq)
	layouts := []struct {
		name  string
		frame func(seq, payload []byte) [][]byte
	}{
		{"vllm: empty delimiter, seq, payload", func(seq, p []byte) [][]byte { return [][]byte{{}, seq, p} }},
		{"no delimiter", func(seq, p []byte) [][]byte { return [][]byte{seq, p} }},
		{"with a topic frame", func(seq, p []byte) [][]byte { return [][]byte{{}, []byte("kv@x@m"), seq, p} }},
	}
	for _, l := range layouts {
		t.Run(l.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			pub := zmq4.NewPub(ctx)
			defer pub.Close()
			if err := pub.Listen("tcp://127.0.0.1:0"); err != nil {
				t.Fatal(err)
			}
			router := zmq4.NewRouter(ctx)
			defer router.Close()
			if err := router.Listen("tcp://127.0.0.1:0"); err != nil {
				t.Fatal(err)
			}
			go serveReplay(ctx, router, fx.payloads(t), l.frame, end)

			cfg := conformanceConfig()
			cfg.Pods[0].ZMQEndpoint = "tcp://" + pub.Addr().String()
			cfg.Pods[0].ReplayEndpoint = "tcp://" + router.Addr().String()
			c := startCell(t, cfg)
			checkFixtureResult(t, c, fx, f.Tokens, len(fx.Batches))
		})
	}
}

// serveReplay answers replay requests on router with payloads numbered from
// 0, each laid out by frame, then the end marker in the same layout.
func serveReplay(ctx context.Context, router zmq4.Socket, payloads [][]byte, frame func(seq, p []byte) [][]byte, end []byte) {
	for ctx.Err() == nil {
		req, err := router.Recv()
		if err != nil || len(req.Frames) < 2 {
			continue
		}
		id := req.Frames[0]
		start, err := vllmwire.ParseSeq(req.Frames[len(req.Frames)-1])
		if err != nil {
			continue
		}
		for i, p := range payloads {
			if uint64(i) >= start {
				_ = router.Send(zmq4.NewMsgFrom(append([][]byte{id}, frame(vllmwire.EncodeSeq(uint64(i)), p)...)...))
			}
		}
		endFrames := frame(end, nil)
		if len(endFrames) == 4 { // a topic frame: the end marker's is empty
			endFrames[1] = nil
		}
		_ = router.Send(zmq4.NewMsgFrom(append([][]byte{id}, endFrames...)...))
	}
}

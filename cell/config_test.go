package cell

import (
	"errors"
	"fmt"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/cellrouter/cellrouter/cell/index"
	"github.com/cellrouter/cellrouter/gossip"
)

func TestExampleConfigParses(t *testing.T) {
	cfg, err := LoadConfig("testdata/celld.example.yaml")
	if err != nil {
		t.Fatalf("LoadConfig: %v", err)
	}
	if cfg.CellID != "cell-a" || len(cfg.Pods) != 2 || cfg.Pods[1].ReplayEndpoint != "tcp://127.0.0.1:5568" {
		t.Fatalf("got %+v", cfg)
	}
	if len(cfg.Routing.Profiles) != 1 || cfg.Routing.Profiles[0].Score[0].Weight != 2 {
		t.Fatalf("routing profiles %+v", cfg.Routing.Profiles)
	}
	// The example's profiles must build: New validates them.
	cfg.HTTPAddr, cfg.GRPCAddr = "127.0.0.1:0", "127.0.0.1:0"
	c, err := New(cfg, nil)
	if err != nil {
		t.Fatalf("New(example) = %v", err)
	}
	c.ix.Close()
	c.proxy.Close()
	c.grpcLis.Close()
	c.httpLis.Close()
	if cfg.Events.DeadAfter != 30*time.Second {
		t.Fatalf("dead_after = %v, want 30s", cfg.Events.DeadAfter)
	}
}

// TestExampleConfigGossip checks the example's gossip section: every
// field of GossipConfig is documented there, the values are read as
// written (the tuning ones equal to the defaults, as the example's header
// promises), they make a valid gossip node configuration, and the cell
// binds a port other than globald's default while seeding it.
func TestExampleConfigGossip(t *testing.T) {
	data, err := os.ReadFile("testdata/celld.example.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var raw struct {
		Gossip map[string]any `yaml:"gossip"`
	}
	if err := yaml.Unmarshal(data, &raw); err != nil {
		t.Fatal(err)
	}
	typ := reflect.TypeOf(GossipConfig{})
	for i := range typ.NumField() {
		key := typ.Field(i).Tag.Get("yaml")
		if _, ok := raw.Gossip[key]; !ok {
			t.Errorf("the example's gossip section does not document %q", key)
		}
	}
	cfg, err := LoadConfig("testdata/celld.example.yaml")
	if err != nil {
		t.Fatal(err)
	}
	d := DefaultGossipConfig()
	want := d
	want.Bind, want.Seeds = "127.0.0.1:7947", []string{"127.0.0.1:7946"}
	if !reflect.DeepEqual(cfg.Gossip, want) {
		t.Errorf("gossip: got %+v, want %+v", cfg.Gossip, want)
	}
	g, err := cfg.gossipConfig("127.0.0.1:8080", "127.0.0.1:9090")
	if err != nil {
		t.Fatalf("gossipConfig(example) = %v", err)
	}
	if g.BindAddr != "127.0.0.1" || g.BindPort != 7947 || g.ProbeInterval != time.Second || g.ProbeTimeout != 500*time.Millisecond {
		t.Errorf("gossip node config: got bind %s:%d probes %v/%v", g.BindAddr, g.BindPort, g.ProbeInterval, g.ProbeTimeout)
	}
	if gd := gossip.DefaultConfig(); g.BindPort == gd.BindPort {
		t.Errorf("the example's cell binds gossip port %d, the port globald binds by default", g.BindPort)
	}
}

// TestIndexExpectedBlocks checks how the index is sized: by default for the
// pods' KV caches (capped at max_blocks), not at all with -1, as given
// otherwise.
func TestIndexExpectedBlocks(t *testing.T) {
	for _, tt := range []struct {
		yaml string
		want int
	}{
		{"pods: [{id: a, kv_blocks: 1000}, {id: b, kv_blocks: 500}, {id: c}]\n", 1500},
		{"index: {max_blocks: 1200}\npods: [{id: a, kv_blocks: 1000}, {id: b, kv_blocks: 500}]\n", 1200},
		{"index: {expected_blocks: -1}\npods: [{id: a, kv_blocks: 1000}]\n", 0},
		{"index: {expected_blocks: 4096}\npods: [{id: a, kv_blocks: 1000}]\n", 4096},
		{"", 0},
	} {
		cfg, err := ParseConfig([]byte(tt.yaml))
		if err != nil {
			t.Fatalf("%q: %v", tt.yaml, err)
		}
		if got := cfg.indexConfig().ExpectedBlocks; got != tt.want {
			t.Errorf("%q: expected blocks %d, want %d", tt.yaml, got, tt.want)
		}
	}
}

// TestIndexLayout checks that index.layout reaches the index config.
func TestIndexLayout(t *testing.T) {
	for _, tt := range []struct {
		yaml string
		want index.Layout
	}{
		{"", index.LayoutPaged}, // the cell's default since it won (issue 15)
		{"index: {layout: block}\n", index.LayoutBlock},
		{"index: {layout: paged}\n", index.LayoutPaged},
	} {
		cfg, err := ParseConfig([]byte(tt.yaml))
		if err != nil {
			t.Fatalf("%q: %v", tt.yaml, err)
		}
		if got := cfg.indexConfig().Layout; got != tt.want {
			t.Errorf("%q: layout %q, want %q", tt.yaml, got, tt.want)
		}
	}
}

func TestEmptyConfigIsDefault(t *testing.T) {
	cfg, err := ParseConfig(nil)
	if err != nil {
		t.Fatalf("ParseConfig(nil): %v", err)
	}
	if cfg.CellID != DefaultConfig().CellID {
		t.Fatalf("cell_id = %q, want the default", cfg.CellID)
	}
}

func TestConfigErrors(t *testing.T) {
	tests := []struct {
		name, yaml, want string
	}{
		{"unknown field", "cell_idd: x\n", "cell_idd"},
		{"empty cell id", "cell_id: \"\"\n", "cell_id"},
		{"bad http addr", "http_addr: nope\n", "http_addr"},
		{"bad block size", "events: {block_size: 0}\n", "BlockSize"},
		{"zero max blocks", "index: {max_blocks: 0}\n", "MaxBlocks"},
		{"bad expected blocks", "index: {expected_blocks: -2}\n", "expected_blocks"},
		{"expected blocks over the cap", "index: {max_blocks: 10, expected_blocks: 11}\n", "ExpectedBlocks"},
		{"unknown index layout", "index: {layout: pages}\n", "layout"},
		{"bad role", "pods: [{id: a, role: chef}]\n", "Role"},
		{"duplicate pod", "pods: [{id: a}, {id: a}]\n", "duplicate"},
		{"bad pod address", "pods: [{id: a, address: 'x'}]\n", "pods[0].address"},
		{"replay without sub", "pods: [{id: a, replay_endpoint: 'tcp://x:1'}]\n", "replay_endpoint"},
		{"nats without stream", "nats: {url: 'nats://x:4222', stream: ''}\n", "nats"},
		{"negative tick", "tick_interval: -1s\n", "tick_interval"},
		{"negative dp size", "pods: [{id: a, data_parallel_size: -1}]\n", "pods[0].data_parallel_size"},
		{"dp ranks without a port", "pods: [{id: a, data_parallel_size: 2}]\n", "pods[0].data_parallel_size"},
		{"zero queue depth", "zmq: {queue_depth: 0}\n", "zmq.queue_depth"},
		{"bad allowed source", "zmq: {bind: 'tcp://0.0.0.0:5557', allowed_sources: [10.0.0.0/33]}\n", "zmq.allowed_sources"},
		{"allowed sources without bind", "zmq: {allowed_sources: [10.0.0.0/8]}\n", "zmq.bind"},
		{"bad duration", "events: {dead_after: soon}\n", "soon"},
		{"not yaml", "{{{", "yaml"},
		{"bad pod events", "pods: [{id: a, events: some}]\n", "pods[0].events"},
		{"bad default pod events", "approximate: {default_pod_events: maybe}\n", "approximate.default_pod_events"},
		{"zero approximate ttl", "approximate: {ttl: 0s}\n", "approximate.ttl"},
		{"negative learned bound", "approximate: {max_blocks_per_pod: -1}\n", "approximate.max_blocks_per_pod"},
		{"negative speculative ttl", "speculative: {ttl: -1s}\n", "speculative.ttl"},
		{"speculative weight above one", "speculative: {weight: 1.5}\n", "speculative.weight"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseConfig([]byte(tt.yaml))
			if err == nil {
				t.Fatalf("ParseConfig(%q) = nil error, want one mentioning %q", tt.yaml, tt.want)
			}
			if !errors.Is(err, ErrConfig) {
				t.Errorf("error %v does not wrap ErrConfig", err)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q does not mention %q", err, tt.want)
			}
		})
	}
}

func TestLoadConfigMissingFile(t *testing.T) {
	if _, err := LoadConfig("testdata/does-not-exist.yaml"); err == nil || !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("LoadConfig(missing) = %v, want a not-exist error", err)
	}
}

// FuzzParseConfig checks that any input either parses into a configuration
// that validates, or fails with ErrConfig; never a panic.
func FuzzParseConfig(f *testing.F) {
	example, err := os.ReadFile("testdata/celld.example.yaml")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(example)
	f.Add([]byte("cell_id: x\npods: [{id: a, address: '1.2.3.4:5'}]\n"))
	f.Add([]byte("index: {max_blocks: -1}\n"))
	f.Add([]byte(""))
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg, err := ParseConfig(data)
		if err != nil {
			if !errors.Is(err, ErrConfig) {
				t.Fatalf("error %v does not wrap ErrConfig", err)
			}
			return
		}
		if err := cfg.Validate(); err != nil {
			t.Fatalf("parsed config does not validate: %v", err)
		}
	})
}

// TestZMQConfig checks how pods map onto the ZMQ transport: a dialed pod
// with its model (not the default) and its ranks on port+r; a pod that
// connects to bind has its replay socket known by id and by address.
func TestZMQConfig(t *testing.T) {
	cfg, err := ParseConfig([]byte(`
events: {default_model: fallback}
zmq: {bind: "tcp://127.0.0.1:5600", topic_prefix: "", allowed_sources: [10.0.0.0/24, "10.1.0.9"]}
pods:
  - {id: a, address: "10.0.0.7:8000", model: llama, zmq_endpoint: "tcp://10.0.0.7:5557", replay_endpoint: "tcp://10.0.0.7:6557", data_parallel_size: 2}
  - {id: b, zmq_endpoint: "tcp://10.0.0.8:5557"}
  - {id: c, address: "10.0.0.9:8000", replay_endpoint: "tcp://10.0.0.9:5558"}
`))
	if err != nil {
		t.Fatal(err)
	}
	z, ok := cfg.zmqConfig()
	if !ok {
		t.Fatal("zmqConfig: transport not needed")
	}
	if z.TopicPrefix != "" {
		t.Errorf("got topic prefix %q, want the configured empty one", z.TopicPrefix)
	}
	if fmt.Sprint(z.AllowedSources) != "[10.0.0.0/24 10.1.0.9/32]" {
		t.Errorf("got allowed sources %v, want [10.0.0.0/24 10.1.0.9/32]", z.AllowedSources)
	}
	want := []struct {
		pub, replay, pod, model string
		rank                    int
		hasRank                 bool
	}{
		{"tcp://10.0.0.7:5557", "tcp://10.0.0.7:6557", "a", "llama", 0, true},
		{"tcp://10.0.0.7:5558", "tcp://10.0.0.7:6558", "a", "llama", 1, true},
		{"tcp://10.0.0.8:5557", "", "b", "", 0, false},
	}
	if len(z.Endpoints) != len(want) {
		t.Fatalf("got %d endpoints %+v, want %d", len(z.Endpoints), z.Endpoints, len(want))
	}
	for i, w := range want {
		e := z.Endpoints[i]
		if e.Pub != w.pub || e.Replay != w.replay || e.Pod != w.pod || e.Model != w.model || e.Rank != w.rank || e.HasRank != w.hasRank {
			t.Errorf("endpoint %d: got %+v, want %+v", i, e, w)
		}
	}
	if z.ReplayEndpoints["c"] != "tcp://10.0.0.9:5558" || z.ReplayEndpoints["10.0.0.9:8000"] != "tcp://10.0.0.9:5558" {
		t.Errorf("got replay endpoints %v, want c's by id and by address", z.ReplayEndpoints)
	}
}

// TestGossipAdvertisesReachableAPIAddrs checks the API addresses a cell
// puts in its gossip metadata: a listener on every interface is advertised
// at the host the pool reaches the cell at (what globald dials to probe and
// hand off), a listener on a named host as it is.
func TestGossipAdvertisesReachableAPIAddrs(t *testing.T) {
	tests := []struct {
		name              string
		bind, advertise   string
		httpAddr          string
		wantHTTP, wantRPC string
	}{
		{"wildcard API, advertise", ":7947", "10.1.2.3:7947", "0.0.0.0:8080", "10.1.2.3:8080", "10.1.2.3:9090"},
		{"IPv6 wildcard API, advertise", ":7947", "10.1.2.3:7947", "[::]:8080", "10.1.2.3:8080", "10.1.2.3:9090"},
		{"wildcard API, gossip bound to a host", "10.4.0.9:7947", "", "0.0.0.0:8080", "10.4.0.9:8080", "10.4.0.9:9090"},
		{"named API host wins", ":7947", "10.1.2.3:7947", "192.168.0.5:8080", "192.168.0.5:8080", "10.1.2.3:9090"},
		{"no host to take", ":7947", "", "0.0.0.0:8080", "0.0.0.0:8080", "[::]:9090"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := DefaultConfig()
			cfg.Gossip.Bind, cfg.Gossip.Advertise = tt.bind, tt.advertise
			grpcAddr := "[::]:9090"
			g, err := cfg.gossipConfig(tt.httpAddr, grpcAddr)
			if err != nil {
				t.Fatal(err)
			}
			if g.HTTPAddr != tt.wantHTTP || g.GRPCAddr != tt.wantRPC {
				t.Errorf("advertised http %s grpc %s, want %s %s", g.HTTPAddr, g.GRPCAddr, tt.wantHTTP, tt.wantRPC)
			}
		})
	}
}

// TestParseSources checks zmq.allowed_sources: CIDRs and bare addresses.
func TestParseSources(t *testing.T) {
	got, err := parseSources([]string{"10.0.0.0/16", "192.168.1.7", "fd00::/8", " 10.1.2.3/8 "})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"10.0.0.0/16", "192.168.1.7/32", "fd00::/8", "10.0.0.0/8"}
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for i := range want {
		if got[i].String() != want[i] {
			t.Errorf("entry %d: got %v, want %s", i, got[i], want[i])
		}
	}
	for _, bad := range []string{"", "10.0.0.0/33", "host.example", "10.0.0.0/8/8"} {
		if _, err := parseSources([]string{bad}); err == nil {
			t.Errorf("parseSources(%q) = nil error, want one", bad)
		}
	}
}

// FuzzParseSources checks that zmq.allowed_sources never panics the parser
// and that an accepted entry is a valid, masked network.
func FuzzParseSources(f *testing.F) {
	for _, s := range []string{"10.0.0.0/16", "192.168.1.7", "fd00::/8", "::ffff:10.0.0.1", "10.0.0.0/33", "", " 1.2.3.4/8 ", "a/b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, err := parseSources([]string{s})
		if err != nil {
			if !strings.Contains(err.Error(), "[0]") {
				t.Fatalf("error %q does not name the entry", err)
			}
			return
		}
		if len(got) != 1 || !got[0].IsValid() || got[0] != got[0].Masked() {
			t.Fatalf("parseSources(%q) = %v: want one valid, masked network", s, got)
		}
	})
}

package zmqsub

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"sync"
	"testing"

	"github.com/cellrouter/cellrouter/cell/events"
	"github.com/cellrouter/cellrouter/cell/events/vllmwire"
	"github.com/go-zeromq/zmq4"
	"github.com/go-zeromq/zmq4/transport"
)

// recordingSink is the applier, noting the pods of the batches it is given.
type recordingSink struct {
	*events.Applier
	mu   sync.Mutex
	pods map[string]int
}

func (r *recordingSink) ApplyBatch(ctx context.Context, b *events.Batch) error {
	r.mu.Lock()
	r.pods[b.Pod]++
	r.mu.Unlock()
	return r.Applier.ApplyBatch(ctx, b)
}

func (r *recordingSink) count(pod string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.pods[pod]
}

// fromTransport dials TCP from a fixed local address: a publisher on
// another host, as far as the bind socket can tell (127.0.0.2 and up all
// reach this machine).
type fromTransport struct{ local net.IP }

func (t fromTransport) Dial(ctx context.Context, _ transport.Dialer, addr string) (net.Conn, error) {
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: t.local}}
	return d.DialContext(ctx, "tcp", addr)
}

func (fromTransport) Listen(context.Context, string) (net.Listener, error) {
	return nil, errors.New("fromTransport: dial only")
}

func (fromTransport) Addr(ep string) (string, error) { return transport.New("tcp").Addr(ep) }

var registerFrom sync.Map // scheme -> error

// pubFrom returns a raw PUB socket dialed to endpoint from source ip, and
// a send function for batches of pod. The dial may fail (a refused source
// is cut off during the greeting); send then does nothing.
func pubFrom(t *testing.T, ip, endpoint, pod string) func(seq uint64) {
	t.Helper()
	scheme := "from-" + string(rune('a'+netip.MustParseAddr(ip).As4()[3]))
	if _, done := registerFrom.LoadOrStore(scheme, true); !done {
		if err := zmq4.RegisterTransport(scheme, fromTransport{local: net.ParseIP(ip)}); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	pub := zmq4.NewPub(ctx, zmq4.WithLogger(nil), zmq4.WithDialerMaxRetries(0))
	t.Cleanup(func() { pub.Close(); cancel() })
	dialed := pub.Dial(scheme+endpoint[len("tcp"):]) == nil
	w := newWorkload(uint64(len(pod)), 16)
	return func(seq uint64) {
		if !dialed {
			return
		}
		payload, err := vllmwire.EncodePayload(nil, w.batch(), vllmwire.FormMap)
		if err != nil {
			t.Fatal(err)
		}
		_ = pub.Send(zmq4.NewMsgFrom([]byte("kv@"+pod+"@m"), vllmwire.EncodeSeq(seq), payload))
	}
}

// TestBindAllowedSources binds a real SUB socket limited to 127.0.0.2 and
// has two engines publish to it, from 127.0.0.2 and from 127.0.0.3: the
// first one's batches reach the sink, the second one's connection is
// refused and counted, and none of its batches gets through.
func TestBindAllowedSources(t *testing.T) {
	sink := &recordingSink{Applier: newCell(t).a, pods: map[string]int{}}
	cfg := testConfig()
	cfg.Bind = "tcp://127.0.0.1:0"
	cfg.AllowedSources = []netip.Prefix{netip.MustParsePrefix("127.0.0.2/32")}
	s, err := New(cfg, sink)
	if err != nil {
		t.Fatal(err)
	}
	runSubscriber(t, s)
	ok := pubFrom(t, "127.0.0.2", s.BindEndpoint(), "pod-ok")
	bad := pubFrom(t, "127.0.0.3", s.BindEndpoint(), "pod-bad")
	seq := uint64(0)
	waitFor(t, func() string { return "the allowed publisher's batches and a refused connection" }, func() bool {
		ok(seq)
		bad(seq)
		seq++
		return sink.count("pod-ok") >= 5 && s.Counters().RefusedConnections.Load() >= 1
	})
	if got := sink.count("pod-bad"); got != 0 {
		t.Errorf("got %d batches of the publisher from 127.0.0.3, want 0 (outside allowed_sources)", got)
	}
}

// TestBindKnownPods checks that a topic naming a pod KnownPod refuses is
// dropped before the bind socket keeps any state for it, while a known
// pod's batches reach the sink over the same socket.
func TestBindKnownPods(t *testing.T) {
	sink := &recordingSink{Applier: newCell(t).a, pods: map[string]int{}}
	cfg := testConfig()
	cfg.Bind = "tcp://127.0.0.1:0"
	cfg.KnownPod = func(pod string) bool { return pod == "pod-a" }
	s, err := New(cfg, sink)
	if err != nil {
		t.Fatal(err)
	}
	runSubscriber(t, s)
	known := pubFrom(t, "127.0.0.2", s.BindEndpoint(), "pod-a")
	ghost := pubFrom(t, "127.0.0.2", s.BindEndpoint(), "ghost")
	seq := uint64(0)
	unknown := func() uint64 { return s.Counters().DecodeErrors[reasonIndex("unknown_pod")].Load() }
	waitFor(t, func() string { return "pod-a's batches and ghost's drops" }, func() bool {
		known(seq)
		ghost(seq)
		seq++
		return sink.count("pod-a") >= 5 && unknown() >= 5
	})
	if got := sink.count("ghost"); got != 0 {
		t.Errorf("got %d batches of an unknown pod at the sink, want 0", got)
	}
	for _, st := range s.Status() {
		if st.Bind && st.Holders > 1 {
			t.Errorf("bind socket tracks %d holders, want 1 (pod-a only)", st.Holders)
		}
	}
}

// TestSourceFilterAllows checks the address matching against the networks,
// IPv4-mapped addresses included.
func TestSourceFilterAllows(t *testing.T) {
	f := &sourceFilter{allowed: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("fd00::/8")}}
	for _, tc := range []struct {
		addr net.Addr
		want bool
	}{
		{&net.TCPAddr{IP: net.ParseIP("10.1.2.3"), Port: 5}, true},
		{&net.TCPAddr{IP: net.ParseIP("::ffff:10.1.2.3"), Port: 5}, true},
		{&net.TCPAddr{IP: net.ParseIP("11.1.2.3"), Port: 5}, false},
		{&net.TCPAddr{IP: net.ParseIP("fd00::1"), Port: 5}, true},
		{&net.TCPAddr{IP: net.ParseIP("fe80::1"), Port: 5}, false},
		{&net.UnixAddr{Name: "/tmp/x", Net: "unix"}, false},
	} {
		if got := f.allows(tc.addr); got != tc.want {
			t.Errorf("allows(%v) = %v, want %v", tc.addr, got, tc.want)
		}
	}
}

package overhead

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"sort"
	"time"

	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/cellrouter/cellrouter/internal/epp"
	"github.com/cellrouter/cellrouter/internal/epp/epptest"
)

// The sides of the picker measurement: the pod called directly, the cell
// in proxy mode (the request through celld's HTTP data plane), and the
// cell as the endpoint picker of a gateway (the gateway asks celld over
// ext_proc, then sends the request to the picked pod itself).
const (
	SidePod    = "pod"
	SideProxy  = "proxy"
	SidePicker = "picker"
	// SideFixedPicker is the same gateway with a picker that decides
	// nothing (it names the pod at once): the protocol's and the
	// in-process gateway's own cost, which picker minus it leaves out.
	SideFixedPicker = "fixed_picker"
)

var pickerSides = []string{SidePod, SideProxy, SidePicker, SideFixedPicker}

// PickerReport compares the cell's two modes for the same requests,
// interleaved one by one in the same run: added latency against calling
// the pod directly, and process CPU per request beyond the pod path's.
// In picker mode the gateway is played in process by epptest (the
// go-control-plane types, headers and body frames, response headers and
// body relayed through the picker, as Envoy's ext_proc filter does in
// FULL_DUPLEX_STREAMED), so the picker's CPU figure includes the
// gateway's own ext_proc work, which a real deployment spends in Envoy:
// it is an upper bound on the cell's share. A fourth side sends the same
// requests through the same gateway to a picker that decides nothing
// (SideFixedPicker), so picker minus it is the cell's decision alone.
type PickerReport struct {
	Requests int `json:"requests"`
	// OverheadP50Ms and OverheadP99Ms are picker mode minus the pod
	// called directly, non-streaming; CPUUsPerRequest the picker path's
	// process CPU per request minus the pod path's, in microseconds.
	OverheadP50Ms   float64 `json:"overhead_p50_ms"`
	OverheadP99Ms   float64 `json:"overhead_p99_ms"`
	CPUUsPerRequest float64 `json:"cpu_us_per_request"`
	// ProxyOverheadP50Ms, ProxyOverheadP99Ms and ProxyCPUUsPerRequest are
	// the same for proxy mode, measured beside it.
	ProxyOverheadP50Ms   float64 `json:"proxy_overhead_p50_ms"`
	ProxyOverheadP99Ms   float64 `json:"proxy_overhead_p99_ms"`
	ProxyCPUUsPerRequest float64 `json:"proxy_cpu_us_per_request"`
	// NonStreaming and Streaming hold each side's latency.
	NonStreaming map[string]Side `json:"non_streaming"`
	Streaming    map[string]Side `json:"streaming"`
	// StreamingOverheadP50Ms and StreamingOverheadP99Ms are picker mode
	// minus the pod, streaming.
	StreamingOverheadP50Ms float64 `json:"streaming_overhead_p50_ms"`
	StreamingOverheadP99Ms float64 `json:"streaming_overhead_p99_ms"`
	// CPUByPathUs is each path's process CPU per request (median of
	// cpuRounds rounds).
	CPUByPathUs map[string]float64 `json:"cpu_by_path_us"`
	// DecisionCPUUsPerRequest and DecisionP50Ms are picker mode minus the
	// fixed picker (SideFixedPicker): the cell's decision and its
	// bookkeeping, without the protocol's exchange or the gateway's work.
	DecisionCPUUsPerRequest float64 `json:"decision_cpu_us_per_request"`
	DecisionP50Ms           float64 `json:"decision_p50_ms"`
}

// pickerBench sends the same requests to the three sides.
type pickerBench struct {
	client *http.Client
	ep     extprocv3.ExternalProcessorClient
	fixed  extprocv3.ExternalProcessorClient // the fixed picker
	pod    string                            // base URL of the pod
	cell   string                            // base URL of the cell's data plane
}

// one sends request i of the mode to side and returns its latency.
func (b *pickerBench) one(ctx context.Context, side, path string, body []byte) (time.Duration, error) {
	switch side {
	case SidePod:
		return call(ctx, b.client, b.pod+path, body)
	case SideProxy:
		return call(ctx, b.client, b.cell+path, body)
	}
	ep := b.ep
	if side == SideFixedPicker {
		ep = b.fixed
	}
	start := time.Now()
	out, err := epptest.Do(ctx, ep, epptest.Call{Method: http.MethodPost, Path: path,
		Header: http.Header{"Content-Type": {"application/json"}}, Body: body, Frames: 2})
	d := time.Since(start)
	switch {
	case err != nil:
		return 0, err
	case out.Immediate != nil:
		return 0, fmt.Errorf("picker answered %d: %s", out.Immediate.GetStatus().GetCode(), out.Immediate.GetBody())
	case out.Status != http.StatusOK:
		return 0, fmt.Errorf("picked pod %s answered %d", out.Served, out.Status)
	}
	return d, nil
}

// measurePicker compares picker mode with proxy mode for the cell at
// eppAddr, whose pods include pod.
func measurePicker(ctx context.Context, client *http.Client, cfg Config, p *prompts, pod, cellHTTP, eppAddr string) (*PickerReport, error) {
	cc, err := grpc.NewClient(eppAddr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return nil, err
	}
	defer cc.Close()
	fixed, stop, err := startFixedPicker(pod)
	if err != nil {
		return nil, err
	}
	defer stop()
	b := &pickerBench{client: client, ep: extprocv3.NewExternalProcessorClient(cc), fixed: extprocv3.NewExternalProcessorClient(fixed),
		pod: "http://" + pod, cell: "http://" + cellHTTP}
	rep := &PickerReport{Requests: cfg.Requests, CPUByPathUs: map[string]float64{}}
	for _, stream := range []bool{false, true} {
		chunks := 1
		if stream {
			chunks = cfg.Chunks
		}
		lat := map[string][]time.Duration{}
		for i := 0; i < cfg.Warmup+cfg.Requests; i++ {
			path, body := p.body(PromptTokens, i, chunks, stream)
			for _, side := range pickerSides {
				d, err := b.one(ctx, side, path, body)
				if err != nil {
					return nil, fmt.Errorf("overhead: picker, %s request %d (streaming %v): %w", side, i, stream, err)
				}
				if i >= cfg.Warmup {
					lat[side] = append(lat[side], d)
				}
			}
		}
		sides := map[string]Side{}
		for _, side := range pickerSides {
			sides[side] = summarize(lat[side])
		}
		if stream {
			rep.Streaming = sides
			rep.StreamingOverheadP50Ms = sides[SidePicker].P50Ms - sides[SidePod].P50Ms
			rep.StreamingOverheadP99Ms = sides[SidePicker].P99Ms - sides[SidePod].P99Ms
			continue
		}
		rep.NonStreaming = sides
		rep.OverheadP50Ms = sides[SidePicker].P50Ms - sides[SidePod].P50Ms
		rep.OverheadP99Ms = sides[SidePicker].P99Ms - sides[SidePod].P99Ms
		rep.ProxyOverheadP50Ms = sides[SideProxy].P50Ms - sides[SidePod].P50Ms
		rep.ProxyOverheadP99Ms = sides[SideProxy].P99Ms - sides[SidePod].P99Ms
		rep.DecisionP50Ms = sides[SidePicker].P50Ms - sides[SideFixedPicker].P50Ms
	}
	if err := b.cpu(ctx, cfg, p, rep); err != nil {
		return nil, err
	}
	return rep, nil
}

// cpu measures each path's process CPU per request: cpuRounds rounds, each
// sending cfg.Requests non-streaming requests to every side in turn, one
// at a time; the median round counts.
func (b *pickerBench) cpu(ctx context.Context, cfg Config, p *prompts, rep *PickerReport) error {
	per := map[string][]float64{}
	for r := 0; r < cpuRounds; r++ {
		for _, side := range pickerSides {
			cpu0 := processCPU()
			for i := 0; i < cfg.Requests; i++ {
				path, body := p.body(PromptTokens, i, 1, false)
				if _, err := b.one(ctx, side, path, body); err != nil {
					return fmt.Errorf("overhead: picker CPU, %s request %d: %w", side, i, err)
				}
			}
			per[side] = append(per[side], float64(processCPU()-cpu0)/float64(time.Microsecond)/float64(cfg.Requests))
		}
	}
	for side, xs := range per {
		sort.Float64s(xs)
		rep.CPUByPathUs[side] = xs[len(xs)/2]
	}
	rep.CPUUsPerRequest = rep.CPUByPathUs[SidePicker] - rep.CPUByPathUs[SidePod]
	rep.ProxyCPUUsPerRequest = rep.CPUByPathUs[SideProxy] - rep.CPUByPathUs[SidePod]
	rep.DecisionCPUUsPerRequest = rep.CPUByPathUs[SidePicker] - rep.CPUByPathUs[SideFixedPicker]
	return nil
}

// startFixedPicker serves, on loopback, an endpoint picker that names pod
// for every request, and returns a connection to it and its stop.
func startFixedPicker(pod string) (*grpc.ClientConn, func(), error) {
	s, err := epp.NewServer(epp.DefaultConfig(), epp.PickerFunc(func(context.Context, *epp.Request) (*epp.Result, error) {
		return &epp.Result{Endpoints: []string{pod}}, nil
	}))
	if err != nil {
		return nil, nil, err
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, nil, err
	}
	srv := grpc.NewServer()
	epp.Register(srv, s, epp.NewHealth(nil))
	done := make(chan struct{})
	go labelled("fixed-picker", func() { defer close(done); srv.Serve(lis) })
	cc, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		srv.Stop()
		<-done
		return nil, nil, err
	}
	return cc, func() { cc.Close(); srv.Stop(); <-done }, nil
}

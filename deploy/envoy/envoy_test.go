// Package envoy holds the standalone Envoy configuration (envoy.yaml) that
// runs celld, or globald, as the endpoint picker of an Envoy without a
// Gateway API controller, and the test that checks it against Envoy's own
// configuration schema (go-control-plane).
package envoy

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	bootstrapv3 "github.com/envoyproxy/go-control-plane/envoy/config/bootstrap/v3"
	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	extprocfilterv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/ext_proc/v3"
	luav3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/lua/v3"
	routerv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/router/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	upstreamhttpv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/upstreams/http/v3"
	"google.golang.org/protobuf/encoding/protojson"
	"gopkg.in/yaml.v3"
)

// The typed configurations envoy.yaml names, so that protojson resolves
// their Any type URLs.
var (
	_ = &routerv3.Router{}
	_ = &upstreamhttpv3.HttpProtocolOptions{}
)

// destinationHeader is the Endpoint Picker Protocol's destination header.
const destinationHeader = "x-gateway-destination-endpoint"

// loadBootstrap parses envoy.yaml into Envoy's bootstrap message, refusing
// unknown fields, and runs the schema's validation rules.
func loadBootstrap(t *testing.T) *bootstrapv3.Bootstrap {
	t.Helper()
	raw, err := os.ReadFile("envoy.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var doc any
	if err := yaml.Unmarshal(raw, &doc); err != nil {
		t.Fatalf("envoy.yaml is not YAML: %v", err)
	}
	js, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	b := &bootstrapv3.Bootstrap{}
	if err := protojson.Unmarshal(js, b); err != nil {
		t.Fatalf("envoy.yaml is not an envoy.config.bootstrap.v3.Bootstrap: %v", err)
	}
	if err := b.ValidateAll(); err != nil {
		t.Fatalf("envoy.yaml breaks the bootstrap's validation rules: %v", err)
	}
	return b
}

// TestEnvoyConfig checks envoy.yaml: it is a valid bootstrap, its listener
// runs the ext_proc filter in FULL_DUPLEX_STREAMED mode both ways against
// an HTTP/2 cluster (the picker), drops a client's destination header
// before the picker and keeps the picker's first destination after it,
// and routes everything to an ORIGINAL_DST cluster that reads the
// destination header.
func TestEnvoyConfig(t *testing.T) {
	b := loadBootstrap(t)
	clusters := map[string]*clusterv3.Cluster{}
	for _, c := range b.GetStaticResources().GetClusters() {
		clusters[c.GetName()] = c
	}
	picked := clusters["picked_endpoint"]
	if picked.GetType() != clusterv3.Cluster_ORIGINAL_DST || picked.GetLbPolicy() != clusterv3.Cluster_CLUSTER_PROVIDED ||
		!picked.GetOriginalDstLbConfig().GetUseHttpHeader() || picked.GetOriginalDstLbConfig().GetHttpHeaderName() != destinationHeader {
		t.Fatalf("picked_endpoint cluster %v: want ORIGINAL_DST reading %s", picked, destinationHeader)
	}
	pickerCluster := clusters["endpoint_picker"]
	opts := &upstreamhttpv3.HttpProtocolOptions{}
	if err := pickerCluster.GetTypedExtensionProtocolOptions()["envoy.extensions.upstreams.http.v3.HttpProtocolOptions"].UnmarshalTo(opts); err != nil ||
		opts.GetExplicitHttpConfig().GetHttp2ProtocolOptions() == nil {
		t.Fatalf("endpoint_picker cluster speaks %v (%v), want HTTP/2 (gRPC)", opts, err)
	}

	listeners := b.GetStaticResources().GetListeners()
	if len(listeners) != 1 || len(listeners[0].GetFilterChains()) != 1 {
		t.Fatalf("want one listener with one filter chain, got %v", listeners)
	}
	hcm := &hcmv3.HttpConnectionManager{}
	if err := listeners[0].GetFilterChains()[0].GetFilters()[0].GetTypedConfig().UnmarshalTo(hcm); err != nil {
		t.Fatal(err)
	}
	for _, vh := range hcm.GetRouteConfig().GetVirtualHosts() {
		for _, r := range vh.GetRoutes() {
			if r.GetRoute().GetCluster() != "picked_endpoint" {
				t.Errorf("route %v does not go to picked_endpoint", r)
			}
		}
	}
	var kinds []string
	for _, f := range hcm.GetHttpFilters() {
		switch url := f.GetTypedConfig().GetTypeUrl(); {
		case strings.HasSuffix(url, ".ext_proc.v3.ExternalProcessor"):
			kinds = append(kinds, "ext_proc")
			ep := &extprocfilterv3.ExternalProcessor{}
			if err := f.GetTypedConfig().UnmarshalTo(ep); err != nil {
				t.Fatal(err)
			}
			pm := ep.GetProcessingMode()
			if pm.GetRequestBodyMode() != extprocfilterv3.ProcessingMode_FULL_DUPLEX_STREAMED || pm.GetResponseBodyMode() != extprocfilterv3.ProcessingMode_FULL_DUPLEX_STREAMED ||
				pm.GetRequestHeaderMode().String() != "SEND" || pm.GetRequestTrailerMode().String() != "SEND" ||
				pm.GetResponseHeaderMode().String() != "SEND" || pm.GetResponseTrailerMode().String() != "SEND" {
				t.Errorf("ext_proc processing mode %v, want headers and trailers SENT and bodies FULL_DUPLEX_STREAMED", pm)
			}
			if ep.GetGrpcService().GetEnvoyGrpc().GetClusterName() != "endpoint_picker" || ep.GetFailureModeAllow() {
				t.Errorf("ext_proc calls %v (failure mode allow %v), want endpoint_picker, failing closed",
					ep.GetGrpcService(), ep.GetFailureModeAllow())
			}
		case strings.HasSuffix(url, ".lua.v3.Lua"):
			l := &luav3.Lua{}
			if err := f.GetTypedConfig().UnmarshalTo(l); err != nil {
				t.Fatal(err)
			}
			src := l.GetDefaultSourceCode().GetInlineString()
			switch {
			case strings.Contains(src, `remove("`+destinationHeader+`")`):
				kinds = append(kinds, "strip")
			case strings.Contains(src, `replace("`+destinationHeader+`"`):
				kinds = append(kinds, "first")
			default:
				t.Errorf("Lua filter %s does neither of its jobs: %s", f.GetName(), src)
			}
		case strings.HasSuffix(url, ".router.v3.Router"):
			kinds = append(kinds, "router")
		default:
			t.Errorf("unexpected filter %s (%s)", f.GetName(), url)
		}
	}
	if got := strings.Join(kinds, ","); got != "strip,ext_proc,first,router" {
		t.Fatalf("filters %s, want strip,ext_proc,first,router", got)
	}
}

package epp

import (
	"net/http"
	"strconv"
	"strings"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	filterv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/ext_proc/v3"
	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"
	"google.golang.org/protobuf/types/known/structpb"
)

const fullDuplex = filterv3.ProcessingMode_FULL_DUPLEX_STREAMED

// readHeaders fills the request from its headers message and the subset
// hint of the message's metadata.
func (x *stream) readHeaders(h *extprocv3.HttpHeaders, msg *extprocv3.ProcessingRequest) {
	x.req.Header = make(http.Header, len(h.GetHeaders().GetHeaders()))
	for _, hv := range h.GetHeaders().GetHeaders() {
		k, v := hv.GetKey(), headerValue(hv)
		switch k {
		case ":method":
			x.req.Method = v
		case ":path":
			if i := strings.IndexByte(v, '?'); i >= 0 {
				v = v[:i]
			}
			x.req.Path = v
		default:
			if !strings.HasPrefix(k, ":") {
				x.req.Header.Add(k, v)
			}
		}
	}
	x.req.Subset, x.req.HasSubset = subsetHint(msg)
}

// headerValue is a header's value: Envoy sends raw_value (value is the
// older field).
func headerValue(hv *corev3.HeaderValue) string {
	if len(hv.GetRawValue()) > 0 {
		return string(hv.GetRawValue())
	}
	return hv.GetValue()
}

// subsetHint reads envoy.lb.subset_hint / x-gateway-destination-endpoint-
// subset: a list of strings or one string, either holding comma-separated
// endpoints.
func subsetHint(msg *extprocv3.ProcessingRequest) ([]string, bool) {
	ns := msg.GetMetadataContext().GetFilterMetadata()[SubsetNamespace]
	if ns == nil {
		return nil, false
	}
	v, ok := ns.GetFields()[SubsetKey]
	if !ok {
		return nil, false
	}
	var out []string
	addList := func(s string) {
		for _, e := range strings.Split(s, ",") {
			if e = strings.TrimSpace(e); e != "" {
				out = append(out, e)
			}
		}
	}
	switch k := v.GetKind().(type) {
	case *structpb.Value_StringValue:
		addList(k.StringValue)
	case *structpb.Value_ListValue:
		for _, e := range k.ListValue.GetValues() {
			addList(e.GetStringValue())
		}
	}
	return out, true
}

// servedEndpoint reads envoy.lb / x-gateway-destination-endpoint-served
// from the response message's metadata, "" when absent.
func servedEndpoint(msg *extprocv3.ProcessingRequest) string {
	ns := msg.GetMetadataContext().GetFilterMetadata()[DestinationNamespace]
	if ns == nil {
		return ""
	}
	return strings.TrimSpace(ns.GetFields()[ServedKey].GetStringValue())
}

// atoi parses a status, 0 when it is not a number.
func atoi(s string) int {
	n, err := strconv.Atoi(s)
	if err != nil {
		return 0
	}
	return n
}

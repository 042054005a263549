package epp

import (
	"net/http"
	"sort"
	"strconv"
	"strings"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"
	"google.golang.org/protobuf/types/known/structpb"
)

// requestHeadersResponse is the answer to the request headers that carries
// a pick: the destination header and metadata (the same value), the
// picker's header changes, and Content-Length when the body is rewritten.
// Clearing the route cache makes the gateway route again with the new
// header.
func requestHeadersResponse(res *Result, bodyLen int) *extprocv3.ProcessingResponse {
	dest := strings.Join(res.Endpoints, ",")
	set := []*corev3.HeaderValueOption{setHeader(DestinationKey, dest)}
	for _, k := range sortedKeys(res.Header) {
		for _, v := range res.Header[k] {
			set = append(set, setHeader(strings.ToLower(k), v))
		}
	}
	if res.Body != nil {
		set = append(set, setHeader("content-length", strconv.Itoa(bodyLen)))
	}
	var remove []string
	for _, k := range res.Remove {
		remove = append(remove, strings.ToLower(k))
	}
	return &extprocv3.ProcessingResponse{
		Response: &extprocv3.ProcessingResponse_RequestHeaders{RequestHeaders: &extprocv3.HeadersResponse{
			Response: &extprocv3.CommonResponse{
				ClearRouteCache: true,
				HeaderMutation:  &extprocv3.HeaderMutation{SetHeaders: set, RemoveHeaders: remove},
			},
		}},
		DynamicMetadata: &structpb.Struct{Fields: map[string]*structpb.Value{
			DestinationNamespace: structpb.NewStructValue(&structpb.Struct{Fields: map[string]*structpb.Value{
				DestinationKey: structpb.NewStringValue(dest),
			}}),
		}},
	}
}

// requestBodyResponse passes a chunk of the request body on: as a streamed
// body mutation in FULL_DUPLEX_STREAMED mode, unchanged (an empty common
// response) in the others.
func requestBodyResponse(chunk []byte, end, duplex bool) *extprocv3.ProcessingResponse {
	return &extprocv3.ProcessingResponse{Response: &extprocv3.ProcessingResponse_RequestBody{
		RequestBody: &extprocv3.BodyResponse{Response: bodyCommon(chunk, end, duplex)}}}
}

// responseBodyResponse passes a chunk of the response body on, as
// requestBodyResponse does.
func responseBodyResponse(chunk []byte, end, duplex bool) *extprocv3.ProcessingResponse {
	return &extprocv3.ProcessingResponse{Response: &extprocv3.ProcessingResponse_ResponseBody{
		ResponseBody: &extprocv3.BodyResponse{Response: bodyCommon(chunk, end, duplex)}}}
}

func bodyCommon(chunk []byte, end, duplex bool) *extprocv3.CommonResponse {
	if !duplex {
		return &extprocv3.CommonResponse{}
	}
	return &extprocv3.CommonResponse{BodyMutation: &extprocv3.BodyMutation{
		Mutation: &extprocv3.BodyMutation_StreamedResponse{StreamedResponse: &extprocv3.StreamedBodyResponse{
			Body: chunk, EndOfStream: end}}}}
}

// responseHeadersResponse answers the response headers, adding h.
func responseHeadersResponse(h http.Header) *extprocv3.ProcessingResponse {
	var set []*corev3.HeaderValueOption
	for _, k := range sortedKeys(h) {
		for _, v := range h[k] {
			set = append(set, setHeader(strings.ToLower(k), v))
		}
	}
	common := &extprocv3.CommonResponse{}
	if len(set) > 0 {
		common.HeaderMutation = &extprocv3.HeaderMutation{SetHeaders: set}
	}
	return &extprocv3.ProcessingResponse{Response: &extprocv3.ProcessingResponse_ResponseHeaders{
		ResponseHeaders: &extprocv3.HeadersResponse{Response: common}}}
}

// immediateResponse answers the client with a instead of routing.
func immediateResponse(a *Error) *extprocv3.ProcessingResponse {
	var set []*corev3.HeaderValueOption
	for _, k := range sortedKeys(a.Header) {
		for _, v := range a.Header[k] {
			set = append(set, setHeader(strings.ToLower(k), v))
		}
	}
	return &extprocv3.ProcessingResponse{Response: &extprocv3.ProcessingResponse_ImmediateResponse{
		ImmediateResponse: &extprocv3.ImmediateResponse{
			Status:  &typev3.HttpStatus{Code: typev3.StatusCode(a.Status)},
			Headers: &extprocv3.HeaderMutation{SetHeaders: set},
			Body:    a.Body,
			Details: "cellrouter_epp_" + strconv.Itoa(a.Status),
		}}}
}

func setHeader(k, v string) *corev3.HeaderValueOption {
	return &corev3.HeaderValueOption{Header: &corev3.HeaderValue{Key: k, RawValue: []byte(v)}}
}

func sortedKeys(h http.Header) []string {
	keys := make([]string, 0, len(h))
	for k := range h {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

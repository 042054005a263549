package epp

// The names the Endpoint Picker Protocol (Gateway API Inference Extension,
// docs/proposals/004-endpoint-picker-protocol) gives its headers and
// metadata. They are the protocol's wire names, spelt as the reference
// implementation spells them.
const (
	// DestinationNamespace is the dynamic-metadata namespace of the
	// picker's answer (and of the served endpoint the gateway reports).
	DestinationNamespace = "envoy.lb"
	// DestinationKey is the request header and the metadata key under
	// DestinationNamespace that carry the picked endpoints: "ip:port" of
	// the pick, then the ordered fallbacks, separated by commas.
	DestinationKey = "x-gateway-destination-endpoint"
	// ServedKey is the metadata key under DestinationNamespace in which the
	// gateway reports the endpoint that served the response.
	ServedKey = "x-gateway-destination-endpoint-served"
	// SubsetNamespace is the filter-metadata namespace of the subset hint.
	SubsetNamespace = "envoy.lb.subset_hint"
	// SubsetKey is the metadata key under SubsetNamespace listing the only
	// endpoints the picker may choose ("ip:port" or "ip"), as a list of
	// strings or one comma-separated string.
	SubsetKey = "x-gateway-destination-endpoint-subset"
)

// BodyChunkBytes bounds one streamed body chunk the server sends back:
// some Envoy builds refuse chunks over 64 KiB, so the picker stays under
// with a margin, as the reference picker does.
const BodyChunkBytes = 62000

// ExtProcService is the gRPC service name of the external processor, also
// the name of its health service.
const ExtProcService = "envoy.service.ext_proc.v3.ExternalProcessor"

// The health services the protocol requires beside ExtProcService.
const (
	// LivenessService answers SERVING while the process serves gRPC.
	LivenessService = "liveness"
	// ReadinessService answers SERVING once the picker can pick.
	ReadinessService = "readiness"
)

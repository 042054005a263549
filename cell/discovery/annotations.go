package discovery

// The annotations and labels discovery reads from an engine Pod. They are
// named here, and only here; the README's "Following a Kubernetes fleet"
// documents each.
const (
	// AnnotationZMQEndpoint overrides the pod's KV event PUB socket, a full
	// ZMQ address ("tcp://10.0.0.5:6000"); without it the cell dials
	// tcp://<pod IP>:<zmq_port>.
	AnnotationZMQEndpoint = "cellrouter.io/zmq-endpoint"
	// AnnotationReplayEndpoint overrides the pod's replay ROUTER socket
	// ("tcp://10.0.0.5:6001"); without it tcp://<pod IP>:<replay_port>.
	AnnotationReplayEndpoint = "cellrouter.io/replay-endpoint"
	// AnnotationDataParallelSize is the engine's data-parallel size, an
	// integer in 1..1024: rank r publishes on the event ports plus r.
	AnnotationDataParallelSize = "cellrouter.io/data-parallel-size"
	// LabelModel (a label, or an annotation of the same key, the label
	// winning) is the model the pod serves, as clients name it; without it
	// the discovery's default_model, else the cell's events.default_model.
	LabelModel = "cellrouter.io/model"
	// AnnotationKVBlocks is the pod's KV cache size in router blocks, for
	// the busy threshold (optional; 0 or absent: unknown).
	AnnotationKVBlocks = "cellrouter.io/kv-blocks"
	// AnnotationEvents is exact (the pod publishes KV events) or none (the
	// cell learns its blocks from its own routing); absent, the cell's
	// approximate.default_pod_events, or none when zmq_port is 0 and the pod
	// names no zmq endpoint.
	AnnotationEvents = "cellrouter.io/events"
	// AnnotationRole is prefill, decode or both (the default).
	AnnotationRole = "cellrouter.io/role"
)

// Every annotation and label, for documentation tests.
var Keys = []string{
	AnnotationZMQEndpoint, AnnotationReplayEndpoint, AnnotationDataParallelSize,
	LabelModel, AnnotationKVBlocks, AnnotationEvents, AnnotationRole,
}

package podset

// Sources a pod comes from (Pod.Source).
const (
	// SourceStatic is the configuration's pods: list.
	SourceStatic = "static"
	// SourceKubernetes is Kubernetes discovery.
	SourceKubernetes = "kubernetes"
)

// Pod is one engine pod of the cell, as the cell reaches it. Its fields
// mirror the cell's pods: entries; discovery fills them from a Pod object.
type Pod struct {
	// ID is the pod's id: the holder id of its events ("pod" or "pod#rank").
	ID string
	// Address is the pod's HTTP address (host:port).
	Address string
	// Role is prefill, decode or both ("" is both).
	Role string
	// ZMQEndpoint is the pod's KV event PUB socket ("" when it publishes
	// none, or connects to the cell's bind socket).
	ZMQEndpoint string
	// ReplayEndpoint is the pod's replay ROUTER socket ("" for none).
	ReplayEndpoint string
	// KVBlocks is the pod's KV cache size in router blocks (0: unknown).
	KVBlocks int
	// Model is the model the pod serves ("" for the cell's default).
	Model string
	// DataParallelSize is the engine's data-parallel size (0 or 1: one).
	DataParallelSize int
	// Events is exact, none, or "" for the cell's default.
	Events string
	// Source is where the pod comes from (SourceStatic, SourceKubernetes).
	Source string
	// UID is the pod object's uid for a discovered pod ("" for a static one).
	UID string
	// Routable says whether the pod takes new requests: Ready and not
	// terminating. A pod that is not routable is kept: its index entries
	// and its subscription stay.
	Routable bool
}

// Holders returns the number of index holders the pod takes when it
// publishes events: one per data-parallel rank.
func (p Pod) Holders() int { return max(1, p.DataParallelSize) }

// sameGeneration reports whether b is the same incarnation of the pod as a:
// the same object and the same endpoints. Only routability and the
// descriptive fields (role, model, size) may differ.
func sameGeneration(a, b Pod) bool {
	return a.UID == b.UID && a.Address == b.Address && a.ZMQEndpoint == b.ZMQEndpoint &&
		a.ReplayEndpoint == b.ReplayEndpoint && a.DataParallelSize == b.DataParallelSize && a.Events == b.Events
}

package gossip

// Load is a cell's load as gossiped with its summary headers. All counts are
// non-negative; the wire format rejects values above MaxLoadValue.
type Load struct {
	// ActiveRequests is the number of requests the cell's pods are serving.
	ActiveRequests int
	// ActiveBlocks is the number of KV blocks in use by running requests.
	ActiveBlocks int
	// FreeBlocks is the number of KV blocks free across the cell's pods.
	FreeBlocks int
	// Pods is the number of live pods in the cell.
	Pods int
	// LeastPodBlocks is the active KV blocks of the cell's least loaded
	// live pod: with it the global tier bounds from below what the cell's
	// best pod would cost for a request (prefill left plus that pod's load),
	// so its search can rank cells by cost before probing any. Wire
	// version 3 added it.
	LeastPodBlocks int
}

// MaxLoadValue bounds every Load field on the wire.
const MaxLoadValue = 1 << 48

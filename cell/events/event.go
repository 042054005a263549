package events

// Kind says which engine event an Event carries.
type Kind uint8

// The engine event kinds, named as vLLM names them on the wire.
const (
	KindBlockStored Kind = iota + 1
	KindBlockRemoved
	KindAllBlocksCleared
)

// String returns the wire name of the kind.
func (k Kind) String() string {
	switch k {
	case KindBlockStored:
		return "BlockStored"
	case KindBlockRemoved:
		return "BlockRemoved"
	case KindAllBlocksCleared:
		return "AllBlocksCleared"
	default:
		return "Unknown"
	}
}

// Medium names the tier an engine keeps a block on ("GPU", "CPU", or a
// storage tier name). The empty Medium means the engine did not say, which
// engines use for GPU.
type Medium string

// Event is one engine KV-cache event, decoded from any transport. It is a
// tagged union: the fields that matter depend on Kind. Slices are owned by the
// Event; a consumer that keeps them past ApplyBatch must copy them.
type Event struct {
	// Kind says which event this is.
	Kind Kind
	// BlockHashes are the engine's own hashes of the stored or removed
	// blocks, in chain order for BlockStored. Engines that send 32-byte hashes
	// are reduced to their last 8 bytes, big-endian.
	BlockHashes []uint64
	// ParentHash is the engine hash of the block before BlockHashes[0];
	// HasParent is false when the first block starts a chain (nil or 0 on the wire).
	ParentHash uint64
	HasParent  bool
	// TokenIDs are the tokens of the stored blocks (BlockStored only):
	// len(BlockHashes) * BlockSize of them.
	TokenIDs []uint32
	// BlockSize is the engine's block size in tokens (BlockStored only).
	BlockSize int
	// LoRAName is the adapter the blocks were computed with ("" for none).
	LoRAName string
	// LoRAID is older vLLM's numeric adapter id (0 for none); it only
	// recognises the adapter among ExtraKeys.
	LoRAID int64
	// CacheSalt is the cache salt an engine sends as a field of its own
	// (SGLang's cache_salt; vLLM puts it among ExtraKeys instead), "" for
	// none. It salts the chain the event starts, as a request's cache_salt
	// does.
	CacheSalt string
	// Medium is the tier of the blocks (BlockStored and BlockRemoved).
	Medium Medium
	// ExtraKeys are the per-block extra cache keys the engine sent (vLLM's
	// extra_keys: LoRA adapter, multimodal identifiers, cache salt), one
	// entry per block of BlockHashes, empty for a block without any; empty
	// as a whole when the engine sent none. See BlockKeys.
	ExtraKeys []BlockKeys
	// GroupIdx is the KV cache group (vLLM hybrid models); 0 when absent.
	GroupIdx int
	// SlidingWindow is the attention window of the group's cache spec; 0 for
	// full attention. Blocks of sliding-window groups are not prefix-reusable
	// beyond the window and are not indexed for prefix matching.
	SlidingWindow int
}

// Batch is one engine message: the events an engine published together,
// with the identity of the publisher and its sequence number.
type Batch struct {
	// Pod is the pod id (for ZMQ the address part of the topic kv@<pod>@<model>).
	Pod string
	// Model is the served model the events belong to ("" when unknown).
	Model string
	// DPRank is the data-parallel rank of the publishing engine, or -1 when
	// the engine did not say. Ranks of one pod are distinct holders.
	DPRank int
	// Seq is the publisher's sequence number of this batch.
	Seq uint64
	// TS is the engine's timestamp of the batch, in seconds since the epoch.
	TS float64
	// Events are the batch's events in engine order.
	Events []Event
}

// Holder names the index holder of a batch: the pod, and its data-parallel
// rank when there is one ("pod#rank"). The Applier may map the pod to a
// configured one first (a pod named by its address).
func (b *Batch) Holder() string { return holderID(b.Pod, b.DPRank) }

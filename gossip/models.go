package gossip

import (
	"encoding/binary"
	"fmt"
	"slices"
	"sort"
	"time"

	"github.com/zeebo/xxh3"
)

// ModelHash is how node metadata names a model: the xxh3 hash of its
// name, so that a cell can list dozens of models (LoRA adapters included)
// within memberlist's 512 bytes of metadata. Two names that collide only
// make the global tier send a request for one to a cell that serves the
// other, which then answers it as it would without the list.
func ModelHash(name string) uint64 { return xxh3.HashString(name) }

// ModelSet is a set of models as node metadata carries it: the ModelHash
// of each, 8 bytes big-endian, ascending, without duplicates. It is a
// string so that metadata and members stay comparable values.
type ModelSet string

// NewModelSet returns the set of the named models.
func NewModelSet(names ...string) ModelSet {
	hs := make([]uint64, 0, len(names))
	for _, n := range names {
		hs = append(hs, ModelHash(n))
	}
	slices.Sort(hs)
	hs = slices.Compact(hs)
	b := make([]byte, 0, 8*len(hs))
	for _, h := range hs {
		b = binary.BigEndian.AppendUint64(b, h)
	}
	return ModelSet(b)
}

// Len returns the number of models.
func (s ModelSet) Len() int { return len(s) / 8 }

func (s ModelSet) at(i int) uint64 { return binary.BigEndian.Uint64([]byte(s[8*i : 8*i+8])) }

// Has reports whether the set holds the model called name.
func (s ModelSet) Has(name string) bool {
	h := ModelHash(name)
	i := sort.Search(s.Len(), func(i int) bool { return s.at(i) >= h })
	return i < s.Len() && s.at(i) == h
}

// valid reports whether s is a whole number of ascending distinct hashes.
func (s ModelSet) valid() bool {
	if len(s)%8 != 0 {
		return false
	}
	for i := 1; i < s.Len(); i++ {
		if s.at(i) <= s.at(i-1) {
			return false
		}
	}
	return true
}

// MaxModels is the most models a cell can list with the longest id and
// addresses and no gateway address (one of the longest takes 16 of them);
// with shorter ones SetModels fits more.
const MaxModels = (MaxMetaSize - 328 - 8) / 8

// SetModels advertises the models the cell serves, when known (see
// NodeMeta.ModelsKnown), in its metadata, which memberlist spreads to every
// member within timeout. A list that does not fit the metadata is
// advertised as unknown. It reports whether the metadata changed; an
// unchanged list costs nothing.
func (n *Node) SetModels(known bool, names []string, timeout time.Duration) (bool, error) {
	if n.closed.Load() {
		return false, ErrClosed
	}
	m := *n.meta.Load()
	m.ModelsKnown, m.Models = known, ""
	if known {
		m.Models = NewModelSet(names...)
		if len(EncodeMeta(m)) > MaxMetaSize {
			m.ModelsKnown, m.Models = false, ""
		}
	}
	if old := n.meta.Load(); old.ModelsKnown == m.ModelsKnown && old.Models == m.Models {
		return false, nil
	}
	n.meta.Store(&m)
	if err := n.ml.Load().UpdateNode(timeout); err != nil {
		return true, fmt.Errorf("gossip: update metadata: %w", err)
	}
	return true, nil
}

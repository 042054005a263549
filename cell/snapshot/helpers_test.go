package snapshot

import (
	"fmt"
	"hash/crc32"
	"sort"
	"testing"

	"github.com/cellrouter/cellrouter/cell/events"
	"github.com/cellrouter/cellrouter/cell/index"
)

type eventsBlock = events.BlockState

func fmtRow(h, parent uint64, b events.BlockState) string {
	return fmt.Sprintf("%x<-%x %+v", h, parent, b)
}

func sortStrings(s []string) { sort.Strings(s) }

func crc32Sum(b []byte) uint32 { return crc32.Checksum(b, crcTable) }

// newApplierOn returns an applier writing to ix, configured like the
// tests' cells.
func newApplierOn(t testing.TB, ix *index.Index) *events.Applier {
	t.Helper()
	ec := events.DefaultConfig()
	ec.BlockSize = routerBS
	ec.DefaultModel = "m"
	a, err := events.NewApplier(ec, ix, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

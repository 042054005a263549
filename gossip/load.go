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
	// Lightest holds the active KV blocks of the cell's NLightest least
	// loaded live pods (at most LightestPods), ascending; Lightest[0] is
	// LeastPodBlocks. With them the global tier can follow a burst of
	// requests into the cell: after one lands on the least loaded pod, the
	// next least is known. Wire version 4 added them.
	Lightest  [LightestPods]int
	NLightest int
	// Waits are how long a new request of each priority band would wait
	// in the cell's flow control (zero: admitted at once). The header does
	// not carry them: a BandLoad message beside it does, so that nodes of
	// earlier versions keep decoding headers. Publish and SetLoad send it.
	Waits BandWaits
}

// LightestPods is how many of its least loaded pods a cell's load names.
const LightestPods = 8

// SetLightest fills Lightest, NLightest and LeastPodBlocks from the active
// blocks of every live pod (in any order; loads is not changed).
func (l *Load) SetLightest(loads []int) {
	l.NLightest = 0
	for _, b := range loads {
		b = max(0, b)
		n := l.NLightest
		if n == LightestPods {
			if b >= l.Lightest[n-1] {
				continue
			}
			n--
		} else {
			l.NLightest++
		}
		// Insert b into Lightest[:n], kept ascending.
		j := n
		for ; j > 0 && l.Lightest[j-1] > b; j-- {
			l.Lightest[j] = l.Lightest[j-1]
		}
		l.Lightest[j] = b
	}
	l.LeastPodBlocks = 0
	if l.NLightest > 0 {
		l.LeastPodBlocks = l.Lightest[0]
	}
}

// MaxLoadValue bounds every Load field on the wire.
const MaxLoadValue = 1 << 48

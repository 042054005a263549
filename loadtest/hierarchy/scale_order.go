package hierarchy

import "github.com/cellrouter/cellrouter/global"

// loadOrder is global.LoadOrder(views) kept current between gossip
// generations: global.SearchDepths walks it for the cells without an
// estimate, least loaded first. After the global tier counts a hand-off's
// load on a cell (global.CellLoad.Routed, which only raises it), moved
// slides that cell back to its place, a few steps instead of a sort of
// every cell. A test checks it against global.LoadOrder.
type loadOrder struct {
	cells []int // the order
	pos   []int // pos[cell] is cell's index in cells, -1 when not usable
}

func newLoadOrder(views []global.CellView) *loadOrder {
	o := &loadOrder{}
	o.reset(views)
	return o
}

// reset recomputes the order from scratch (after a gossip generation).
func (o *loadOrder) reset(views []global.CellView) {
	o.cells = global.LoadOrder(views)
	o.pos = o.pos[:0]
	for range views {
		o.pos = append(o.pos, -1)
	}
	for i, c := range o.cells {
		o.pos[c] = i
	}
}

// moved restores the order after cell's load rose.
func (o *loadOrder) moved(views []global.CellView, cell int) {
	i := o.pos[cell]
	if i < 0 {
		return
	}
	for i+1 < len(o.cells) && loadBefore(views, o.cells[i+1], cell) {
		o.cells[i] = o.cells[i+1]
		o.pos[o.cells[i]] = i
		i++
	}
	o.cells[i] = cell
	o.pos[cell] = i
}

// loadBefore is global.LoadOrder's comparison: the least loaded pod, then
// the cell's load (active blocks, then requests), then the lower index.
func loadBefore(views []global.CellView, a, b int) bool {
	la, lb := &views[a].Load, &views[b].Load
	if la.LeastPodBlocks != lb.LeastPodBlocks {
		return la.LeastPodBlocks < lb.LeastPodBlocks
	}
	fa := float64(la.ActiveBlocks) + float64(la.ActiveRequests)/1024
	fb := float64(lb.ActiveBlocks) + float64(lb.ActiveRequests)/1024
	if fa != fb {
		return fa < fb
	}
	return a < b
}

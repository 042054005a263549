package podset

// Changes are what turns one snapshot into another, each list sorted by id.
type Changes struct {
	// Added are pods new to the set.
	Added []Pod
	// Removed are pods gone from the set (their last state).
	Removed []Pod
	// Replaced are pods whose id stayed while their generation changed (a
	// new object, a new IP, other endpoints): the old generation's entries
	// go, the new one starts afresh.
	Replaced []Replacement
	// Updated are pods of the same generation whose other fields changed
	// (routability, role, model, KV size): their new state.
	Updated []Pod
}

// Replacement is one replaced pod.
type Replacement struct {
	Old, New Pod
}

// Empty reports whether nothing changed.
func (c Changes) Empty() bool {
	return len(c.Added) == 0 && len(c.Removed) == 0 && len(c.Replaced) == 0 && len(c.Updated) == 0
}

// Diff returns the changes from old to new; a nil old is the empty set. It
// is pure: it reads both snapshots and changes neither.
func Diff(old, new *Snapshot) Changes {
	var c Changes
	var prev []Pod
	if old != nil {
		prev = old.Pods
	}
	i, j := 0, 0
	for i < len(prev) || j < len(new.Pods) {
		switch {
		case j == len(new.Pods) || (i < len(prev) && prev[i].ID < new.Pods[j].ID):
			c.Removed = append(c.Removed, prev[i])
			i++
		case i == len(prev) || new.Pods[j].ID < prev[i].ID:
			c.Added = append(c.Added, new.Pods[j])
			j++
		default:
			a, b := prev[i], new.Pods[j]
			switch {
			case !sameGeneration(a, b):
				c.Replaced = append(c.Replaced, Replacement{Old: a, New: b})
			case a != b:
				c.Updated = append(c.Updated, b)
			}
			i++
			j++
		}
	}
	return c
}

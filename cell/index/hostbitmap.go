package index

import "math/bits"

// HostBitmap is a set of pod slots: one bit per slot, 256 slots, four words
// and no pointers, so it is copied by value and compared with ==.
type HostBitmap [4]uint64

// BitmapOf returns the set holding the given slots.
func BitmapOf(slots ...Slot) HostBitmap {
	var b HostBitmap
	for _, s := range slots {
		b = b.Set(s)
	}
	return b
}

// Set returns b with slot s added.
func (b HostBitmap) Set(s Slot) HostBitmap {
	b[s>>6] |= 1 << (s & 63)
	return b
}

// Clear returns b with slot s removed.
func (b HostBitmap) Clear(s Slot) HostBitmap {
	b[s>>6] &^= 1 << (s & 63)
	return b
}

// Has reports whether slot s is in b.
func (b HostBitmap) Has(s Slot) bool {
	return b[s>>6]&(1<<(s&63)) != 0
}

// Count returns the number of slots in b.
func (b HostBitmap) Count() int {
	return bits.OnesCount64(b[0]) + bits.OnesCount64(b[1]) + bits.OnesCount64(b[2]) + bits.OnesCount64(b[3])
}

// IsEmpty reports whether b holds no slot.
func (b HostBitmap) IsEmpty() bool {
	return b[0]|b[1]|b[2]|b[3] == 0
}

// And returns the slots in both b and o.
func (b HostBitmap) And(o HostBitmap) HostBitmap {
	return HostBitmap{b[0] & o[0], b[1] & o[1], b[2] & o[2], b[3] & o[3]}
}

// AndNot returns the slots in b but not in o.
func (b HostBitmap) AndNot(o HostBitmap) HostBitmap {
	return HostBitmap{b[0] &^ o[0], b[1] &^ o[1], b[2] &^ o[2], b[3] &^ o[3]}
}

// Or returns the slots in b or o.
func (b HostBitmap) Or(o HostBitmap) HostBitmap {
	return HostBitmap{b[0] | o[0], b[1] | o[1], b[2] | o[2], b[3] | o[3]}
}

// SubsetOf reports whether every slot of b is in o.
func (b HostBitmap) SubsetOf(o HostBitmap) bool {
	return b[0]&^o[0]|b[1]&^o[1]|b[2]&^o[2]|b[3]&^o[3] == 0
}

// First returns the lowest slot in b; ok is false when b is empty.
func (b HostBitmap) First() (s Slot, ok bool) {
	for w, x := range b {
		if x != 0 {
			return Slot(w*64 + bits.TrailingZeros64(x)), true
		}
	}
	return 0, false
}

// ForEach calls f for every slot in b, lowest first.
func (b HostBitmap) ForEach(f func(Slot)) {
	for w, x := range b {
		for x != 0 {
			t := bits.TrailingZeros64(x)
			f(Slot(w*64 + t))
			x &= x - 1
		}
	}
}

// Slots appends the slots of b to dst, lowest first, and returns it.
func (b HostBitmap) Slots(dst []Slot) []Slot {
	for w, x := range b {
		for x != 0 {
			t := bits.TrailingZeros64(x)
			dst = append(dst, Slot(w*64+t))
			x &= x - 1
		}
	}
	return dst
}

package pipeline

import (
	"fmt"
	"reflect"
	"sync"
)

// SlotRef names a slot and its Go type, for profile validation and error
// messages.
type SlotRef struct {
	id   int
	Name string
	Type reflect.Type
}

// String renders the slot as name(type).
func (r SlotRef) String() string { return fmt.Sprintf("%s(%s)", r.Name, r.Type) }

// Slot is a typed key on the routing Context: plug-ins exchange data only
// through slots, so what a plug-in reads and writes is declared, checked at
// start-up and type-safe, instead of living in a map of strings to any.
type Slot[T any] struct{ ref SlotRef }

var slotNames = struct {
	sync.Mutex
	byName map[string]SlotRef
	n      int
}{byName: map[string]SlotRef{}}

// NewSlot declares a slot. Slots are declared once, as package variables;
// declaring the same name twice panics, because two plug-ins would then
// silently share data they do not agree on.
func NewSlot[T any](name string) Slot[T] {
	slotNames.Lock()
	defer slotNames.Unlock()
	if _, dup := slotNames.byName[name]; dup {
		panic(fmt.Sprintf("pipeline: slot %q declared twice", name))
	}
	ref := SlotRef{id: slotNames.n, Name: name, Type: reflect.TypeFor[T]()}
	slotNames.n++
	slotNames.byName[name] = ref
	return Slot[T]{ref: ref}
}

// Ref returns the slot's name and type.
func (s Slot[T]) Ref() SlotRef { return s.ref }

// Get returns the slot's value in rc, and false if no plug-in set it.
func (s Slot[T]) Get(rc *Context) (T, bool) {
	if id := s.ref.id; id < len(rc.values) && rc.values[id].set {
		return rc.values[id].box.(*slotBox[T]).v, true
	}
	var zero T
	return zero, false
}

// Set stores v in rc. A context keeps one box per slot across decisions,
// so setting a slot does not allocate once the context has been used
// (boxing a slice in an interface would, on every decision); Reset zeroes
// the boxes, so a pooled context holds no request's data.
func (s Slot[T]) Set(rc *Context, v T) {
	id := s.ref.id
	for len(rc.values) <= id {
		rc.values = append(rc.values, slotValue{})
	}
	sv := &rc.values[id]
	if sv.box == nil {
		sv.box = new(slotBox[T])
	}
	sv.box.(*slotBox[T]).v = v
	sv.set = true
}

// slotValue is a context's storage of one slot.
type slotValue struct {
	box interface{ zero() } // a *slotBox[T] of the slot's type
	set bool
}

// slotBox holds a slot's value.
type slotBox[T any] struct{ v T }

func (b *slotBox[T]) zero() {
	var z T
	b.v = z
}

// Refs is a helper for plug-ins' Reads and Writes methods.
func Refs(refs ...SlotRef) []SlotRef { return refs }

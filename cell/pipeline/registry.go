package pipeline

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"sort"

	"gopkg.in/yaml.v3"
)

// Params are a plug-in's parameters from the profile, decoded by its
// factory into its own typed struct.
type Params struct{ node *yaml.Node }

// Decode decodes the parameters into v, rejecting unknown fields. Empty
// parameters leave v unchanged (its defaults).
func (p Params) Decode(v any) error {
	if p.node == nil || p.node.Kind == 0 {
		return nil
	}
	b, err := yaml.Marshal(p.node)
	if err != nil {
		return err
	}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(v); err != nil && !errors.Is(err, io.EOF) {
		return err
	}
	return nil
}

// ParamsOf returns parameters parsed from YAML text (tests and tools).
func ParamsOf(text string) (Params, error) {
	var n yaml.Node
	if err := yaml.Unmarshal([]byte(text), &n); err != nil {
		return Params{}, err
	}
	if len(n.Content) == 0 {
		return Params{}, nil
	}
	return Params{node: n.Content[0]}, nil
}

// Factory builds a plug-in from its parameters.
type Factory func(Params) (Plugin, error)

// Registry maps plug-in type names to factories. Factories are registered
// by one explicit function (see package plugins), never by init, so what a
// binary can load is visible in one place.
type Registry struct {
	factories map[string]Factory
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry { return &Registry{factories: map[string]Factory{}} }

// Register adds a factory; registering a type twice panics (a programming
// error in the registration function).
func (r *Registry) Register(typ string, f Factory) {
	if _, dup := r.factories[typ]; dup {
		panic(fmt.Sprintf("pipeline: plug-in type %q registered twice", typ))
	}
	r.factories[typ] = f
}

// Types lists the registered plug-in types, sorted.
func (r *Registry) Types() []string {
	out := make([]string, 0, len(r.factories))
	for t := range r.factories {
		out = append(out, t)
	}
	sort.Strings(out)
	return out
}

func (r *Registry) build(spec PluginSpec) (Plugin, error) {
	f, ok := r.factories[spec.Type]
	if !ok {
		return nil, fmt.Errorf("unknown plug-in type %q (known: %v)", spec.Type, r.Types())
	}
	p, err := f(Params{node: spec.Params.node})
	if err != nil {
		return nil, fmt.Errorf("plug-in %q: %w", spec.Type, err)
	}
	return p, nil
}

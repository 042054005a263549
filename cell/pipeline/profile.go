package pipeline

import (
	"fmt"

	"gopkg.in/yaml.v3"
)

// PluginSpec is one plug-in in a profile: its type, its weight (scorers)
// and its parameters. In YAML a bare type name is a spec with defaults and
// an omitted weight is 1; a spec built in Go states its weight (0 mutes a
// scorer).
type PluginSpec struct {
	Type   string  `yaml:"type"`
	Weight float64 `yaml:"weight"`
	Params Params  `yaml:"params"`
}

// UnmarshalYAML accepts a bare type name or a mapping.
func (s *PluginSpec) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode {
		s.Type, s.Weight = n.Value, 1
		return nil
	}
	var raw struct {
		Type   string    `yaml:"type"`
		Weight *float64  `yaml:"weight"`
		Params yaml.Node `yaml:"params"`
	}
	if err := n.Decode(&raw); err != nil {
		return err
	}
	s.Type, s.Weight = raw.Type, 1
	if raw.Weight != nil {
		s.Weight = *raw.Weight
	}
	if raw.Params.Kind != 0 {
		p := raw.Params
		s.Params = Params{node: &p}
	}
	return nil
}

// ProfileConfig is a routing profile as configured: which plug-ins run in
// each stage, in which order, with which weights and parameters.
type ProfileConfig struct {
	// Name identifies the profile in errors, metrics and the API.
	Name string `yaml:"name"`
	// Role is the phase the profile picks for: "" (aggregated), "prefill"
	// or "decode". A decode profile may read PrefillPick.
	Role    string       `yaml:"role"`
	Prepare []PluginSpec `yaml:"prepare"`
	Filter  []PluginSpec `yaml:"filter"`
	Score   []PluginSpec `yaml:"score"`
	Pick    PluginSpec   `yaml:"pick"`
}

// Profile is a built, validated profile.
type Profile struct {
	Name      string
	Role      Role
	preparers []Preparer
	filters   []Filter
	scorers   []Scorer
	weights   []float64
	picker    Picker
}

// ValidationError says why a profile cannot run: which profile, which
// plug-in, which slot, which rule.
type ValidationError struct {
	Profile, Plugin, Slot, Rule string
}

func (e *ValidationError) Error() string {
	msg := fmt.Sprintf("pipeline: profile %q", e.Profile)
	if e.Plugin != "" {
		msg += fmt.Sprintf(": plug-in %q", e.Plugin)
	}
	if e.Slot != "" {
		msg += fmt.Sprintf(": slot %s", e.Slot)
	}
	return msg + ": " + e.Rule
}

// Build builds every plug-in of cfg from the registry and validates the
// profile (see Validate).
func (r *Registry) Build(cfg ProfileConfig) (*Profile, error) {
	verr := func(plugin, slot, rule string) error {
		return &ValidationError{Profile: cfg.Name, Plugin: plugin, Slot: slot, Rule: rule}
	}
	if cfg.Name == "" {
		return nil, verr("", "", "a profile needs a name")
	}
	p := &Profile{Name: cfg.Name}
	switch cfg.Role {
	case "":
		p.Role = RoleBoth
	case "prefill":
		p.Role = RolePrefill
	case "decode":
		p.Role = RoleDecode
	default:
		return nil, verr("", "", fmt.Sprintf("role %q is not prefill, decode or empty", cfg.Role))
	}
	var all []Plugin
	var stages []Stage
	add := func(specs []PluginSpec, st Stage) error {
		for _, spec := range specs {
			pl, err := r.build(spec)
			if err != nil {
				return verr(spec.Type, "", err.Error())
			}
			ok := false
			switch st {
			case StagePrepare:
				var v Preparer
				if v, ok = pl.(Preparer); ok {
					p.preparers = append(p.preparers, v)
				}
			case StageFilter:
				var v Filter
				if v, ok = pl.(Filter); ok {
					p.filters = append(p.filters, v)
				}
			case StageScore:
				var v Scorer
				if v, ok = pl.(Scorer); ok {
					if spec.Weight < 0 {
						return verr(spec.Type, "", fmt.Sprintf("weight %v is negative", spec.Weight))
					}
					p.scorers = append(p.scorers, v)
					p.weights = append(p.weights, spec.Weight)
				}
			case StagePick:
				var v Picker
				if v, ok = pl.(Picker); ok {
					p.picker = v
				}
			}
			if !ok {
				return verr(spec.Type, "", fmt.Sprintf("listed under %s but is not a %s plug-in (mis-ordered)", st, st))
			}
			all = append(all, pl)
			stages = append(stages, st)
		}
		return nil
	}
	if cfg.Pick.Type == "" {
		return nil, verr("", "", "no picker: pick needs a plug-in")
	}
	for _, s := range []struct {
		specs []PluginSpec
		st    Stage
	}{{cfg.Prepare, StagePrepare}, {cfg.Filter, StageFilter}, {cfg.Score, StageScore}, {[]PluginSpec{cfg.Pick}, StagePick}} {
		if err := add(s.specs, s.st); err != nil {
			return nil, err
		}
	}
	if err := validate(cfg.Name, p.Role, all); err != nil {
		return nil, err
	}
	return p, nil
}

// provided are the slots the framework itself writes before a profile runs.
func provided(role Role) map[string]bool {
	m := map[string]bool{}
	if role == RoleDecode {
		m[PrefillPick.Ref().Name] = true
	}
	return m
}

// validate checks, in run order: every slot a plug-in reads was written by
// an earlier plug-in (or the framework); no slot has two writers; every
// plug-in a plug-in requires is present earlier; requirements have no cycle.
func validate(profile string, role Role, plugins []Plugin) error {
	verr := func(plugin, slot, rule string) error {
		return &ValidationError{Profile: profile, Plugin: plugin, Slot: slot, Rule: rule}
	}
	written := provided(role)
	writer := map[string]string{}
	pos := map[string]int{}
	for i, pl := range plugins {
		if _, dup := pos[pl.Type()]; !dup {
			pos[pl.Type()] = i
		}
	}
	for i, pl := range plugins {
		for _, s := range pl.Reads() {
			if !written[s.Name] {
				if w, later := writer[s.Name]; later {
					return verr(pl.Type(), s.String(), "read before its writer "+w)
				}
				return verr(pl.Type(), s.String(), "read but no earlier plug-in writes it")
			}
		}
		for _, s := range pl.Writes() {
			if w, dup := writer[s.Name]; dup {
				return verr(pl.Type(), s.String(), "written by two plug-ins ("+w+" and "+pl.Type()+")")
			}
			writer[s.Name] = pl.Type()
			written[s.Name] = true
		}
		if rq, ok := pl.(Requirer); ok {
			for _, dep := range rq.Requires() {
				j, present := pos[dep]
				switch {
				case !present:
					return verr(pl.Type(), "", "requires plug-in "+dep+", which the profile lacks")
				case j > i:
					return verr(pl.Type(), "", "requires plug-in "+dep+", which runs after it (mis-ordered)")
				}
			}
		}
	}
	return checkCycles(profile, plugins)
}

// checkCycles rejects requirement cycles (A requires B requires A), which
// the ordering rule reports only as "mis-ordered" at one of the two ends.
func checkCycles(profile string, plugins []Plugin) error {
	deps := map[string][]string{}
	for _, pl := range plugins {
		if rq, ok := pl.(Requirer); ok {
			deps[pl.Type()] = append(deps[pl.Type()], rq.Requires()...)
		}
	}
	const (
		white = iota
		grey
		black
	)
	color := map[string]int{}
	var visit func(n string, path []string) error
	visit = func(n string, path []string) error {
		switch color[n] {
		case grey:
			return &ValidationError{Profile: profile, Plugin: n, Rule: fmt.Sprintf("requirement cycle %v", append(path, n))}
		case black:
			return nil
		}
		color[n] = grey
		for _, d := range deps[n] {
			if err := visit(d, append(path, n)); err != nil {
				return err
			}
		}
		color[n] = black
		return nil
	}
	for _, pl := range plugins {
		if err := visit(pl.Type(), nil); err != nil {
			return err
		}
	}
	return nil
}

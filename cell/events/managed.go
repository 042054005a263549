package events

import "time"

// Manage makes spec a managed pod: one the cell knows from its
// configuration or from discovery, with an address and a role, which Tick
// never forgets (it may still die of silence, and come back). A pod new to
// the registry starts Unknown at now; a known one keeps its state and
// holders and takes spec's address and role. A pod known only from its
// events becomes managed.
func (r *Registry) Manage(spec PodSpec, now time.Time) {
	role := spec.Role
	if role == "" {
		role = RoleBoth
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	e := r.entry(spec.ID, now)
	e.info.Address, e.info.Role, e.info.Static = spec.Address, role, true
}

// Forget removes pod from the registry and reports whether it was there.
// The caller kills its index holders first (Applier.Kill), after stopping
// what feeds them, so that no batch brings the pod back; a batch that
// comes later anyway makes it a pod known only from its events, which
// Tick forgets in time.
func (r *Registry) Forget(pod string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	_, ok := r.pods[pod]
	delete(r.pods, pod)
	return ok
}

// Managed reports whether pod is a managed pod (configured, or found by
// the cell's discovery: see Manage). Events of other pods are refused
// unless Config.RefuseUnknownPods is off. A nil Registry manages none.
func (r *Registry) Managed(pod string) bool {
	if r == nil {
		return false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	e, ok := r.pods[pod]
	return ok && e.info.Static
}

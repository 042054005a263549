// Package eventgen turns a Mooncake trace into the KV events a fleet of
// vLLM engines would publish for it: requests are assigned to pods, each pod
// runs the engine cache model (package engine) and publishes, per request, a
// batch with one BlockStored event (token ids, parent hash) for the blocks it
// computed and one BlockRemoved event for the blocks it evicted, numbered
// per pod from 0 as vLLM numbers them.
//
// Engine hashes are the chained router hashes of the request's tokens under
// the pod's model seed (a real engine uses its own hash function; the cell
// never relies on engine hashes being anything but stable names).
package eventgen

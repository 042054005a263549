// Package decisions keeps each daemon's recent routing decisions: a
// bounded ring of Records (request id, trace id, time, tenant, model, the
// path the decision took, the chosen cell and pod, matched blocks, the
// response status, the duration, and the decision's explanation captured
// when it was made), served as JSON at GET /v1/<tier>/decisions and
// GET /v1/<tier>/decisions/{id}.
//
// # Model
//
// The ring holds the last Config.Size records; adding one to a full ring
// drops the oldest. Size 0 disables the ring: New returns nil, and every
// method of a nil *Ring does nothing, so a daemon with the ring off pays
// one nil test per request. Only the explanation's top Config.TopK
// candidates are kept (the pick and its fall-backs first), so a record's
// size is bounded whatever the fleet's.
//
// Records are values: Add copies one in, Recent and Get copy them out; an
// explanation is a protobuf message the ring never modifies after Add
// (callers hand it over). All methods are safe for concurrent use; a lookup
// by id scans the ring (a hundred entries cost less than keeping a map in
// step).
//
// A record holds the tenant's name, never its key: the daemons fill it
// from the authenticated principal, which carries no secret.
package decisions

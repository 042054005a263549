package auth

import "strings"

// SaltPrefix starts every cache salt the router sets for an isolated
// tenant; clients may not send a salt that starts with it.
const SaltPrefix = "tenant:"

// Salt returns the cache salt a request of tenant t that sent the
// cache_salt client ("" for none) is hashed and served under:
//
//   - no tenant (authentication off): the client's salt, as sent;
//   - an isolated tenant: SaltPrefix and its name, then ":" and the
//     client's salt when it sent one, so the tenant's clients can still
//     partition their own cache further, never into another tenant's;
//   - a tenant that opted out: the client's salt, refused (ErrReservedSalt)
//     when it starts with SaltPrefix, which would reach into an isolated
//     tenant's partition.
func Salt(t *Tenant, client string) (string, error) {
	switch {
	case t == nil:
		return client, nil
	case t.Isolated:
		s := SaltPrefix + t.Name
		if client != "" {
			s += ":" + client
		}
		return s, nil
	case strings.HasPrefix(client, SaltPrefix):
		return "", &Error{Err: ErrReservedSalt, Tenant: t.Name}
	}
	return client, nil
}

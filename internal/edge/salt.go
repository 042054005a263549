package edge

import (
	"context"
	"encoding/json"

	"github.com/cellrouter/cellrouter/api/openai"
	"github.com/cellrouter/cellrouter/internal/auth"
)

// Salt gives a parsed data-plane request the cache salt of the tenant it
// acts for (auth.Salt), rewriting the body's cache_salt field when the
// salt changes, so that the next tier and the engine see it: the cell
// hashes the body it is handed, and vLLM partitions its prefix cache by
// the field. A request from a peer keeps the salt its peer set. It returns
// the body to forward; req.CacheSalt is updated.
func Salt(ctx context.Context, body []byte, req *openai.Request) ([]byte, error) {
	p, _ := PrincipalFrom(ctx)
	if p.Peer {
		return body, nil
	}
	salt, err := auth.Salt(p.Tenant, req.CacheSalt)
	if err != nil || salt == req.CacheSalt {
		return body, err
	}
	v, err := json.Marshal(salt)
	if err != nil {
		return nil, err
	}
	out, err := openai.Rewrite(body, openai.Set("cache_salt", v))
	if err != nil {
		return nil, err
	}
	req.CacheSalt = salt
	return out, nil
}

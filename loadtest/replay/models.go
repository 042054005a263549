package replay

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/cellrouter/cellrouter/api/openai"
)

// ErrNoModel means the target's GET /v1/models could not name a model to
// replay with: the call failed, or the list is empty.
var ErrNoModel = errors.New("replay: no model from the target")

// FirstModel returns the id of the first model the target lists at GET
// /v1/models (an OpenAI endpoint, vLLM, a cell or the global tier), which is
// the model a replay uses when none is given. Errors wrap ErrNoModel and
// say what the target answered.
func FirstModel(ctx context.Context, target string, timeout time.Duration) (string, error) {
	u, err := url.Parse(target)
	if err != nil || u.Host == "" {
		return "", fmt.Errorf("%w: target %q is not a URL", ErrNoModel, target)
	}
	u.Path = trimSlash(u.Path) + "/v1/models"
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return "", fmt.Errorf("%w: %v", ErrNoModel, err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", fmt.Errorf("%w: GET %s: %v", ErrNoModel, u, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	if err != nil {
		return "", fmt.Errorf("%w: GET %s: %v", ErrNoModel, u, err)
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("%w: GET %s answered %s: %s", ErrNoModel, u, resp.Status, strings.TrimSpace(string(data[:min(len(data), 300)])))
	}
	list, err := openai.ParseModelList(data)
	if err != nil {
		return "", fmt.Errorf("%w: GET %s: %v", ErrNoModel, u, err)
	}
	if len(list.Data) == 0 {
		return "", fmt.Errorf("%w: GET %s lists no model", ErrNoModel, u)
	}
	return list.Data[0].ID, nil
}

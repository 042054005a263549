package cell

import (
	"context"
	"errors"
	"net/http"

	"google.golang.org/grpc/codes"

	"github.com/cellrouter/cellrouter/api/openai"
	"github.com/cellrouter/cellrouter/cachekey/tokenizer"
	"github.com/cellrouter/cellrouter/cell/pipeline"
	"github.com/cellrouter/cellrouter/cell/plugins"
)

// decideFailure is how the cell answers a request it could not plan (an
// error of router.decide), on the data plane and in the Route API: the
// status, and an OpenAI error body whose message says what failed without
// the pods' addresses or their raw answers (the caller logs err itself).
// When a pod refused to tokenize the prompt with a 4xx (an unknown model, a
// prompt longer than the context), the pod's own error is relayed with its
// status, as the pod would have answered the request.
func decideFailure(err error) (int, openai.ErrorBody) {
	server := func(status int, code, msg string) (int, openai.ErrorBody) {
		return status, openai.NewErrorBody(openai.TypeServer, msg, "", code)
	}
	var se *tokenizer.StatusError
	switch {
	case errors.Is(err, pipeline.ErrNoCandidate):
		return server(http.StatusServiceUnavailable, "no_pod_available", "no pod of the cell can take the request")
	case errors.Is(err, errNoTokenizePod):
		return server(http.StatusServiceUnavailable, "no_pod_available", "no pod of the cell is available to tokenize the prompt")
	case errors.Is(err, plugins.ErrNoTokenizer):
		return http.StatusBadRequest, openai.NewErrorBody(openai.TypeInvalidRequest,
			"this router cannot tokenize text prompts: send token ids", "prompt", "")
	case errors.Is(err, tokenizer.ErrUnsupportedMessage):
		return http.StatusBadRequest, openai.NewErrorBody(openai.TypeInvalidRequest,
			"a message is not supported by the model's chat template", "messages", "")
	case errors.As(err, &se) && se.Status >= 400 && se.Status < 500:
		if body, _, ok := openai.ParseErrorBody(se.Body); ok {
			if body.Error.Type == "" {
				body.Error.Type = openai.TypeInvalidRequest
			}
			return se.Status, body
		}
		return se.Status, openai.NewErrorBody(openai.TypeInvalidRequest,
			"the model server refused to tokenize the prompt ("+http.StatusText(se.Status)+")", "", "")
	case errors.Is(err, context.DeadlineExceeded):
		return server(http.StatusGatewayTimeout, "upstream_timeout", "the model server timed out tokenizing the prompt")
	case errors.Is(err, tokenizer.ErrRemote):
		return server(http.StatusBadGateway, "upstream_failure", "the model server failed to tokenize the prompt")
	}
	return server(http.StatusInternalServerError, "routing_failure", "the cell could not route the request")
}

// grpcCode maps a decideFailure status to the Route API's gRPC code.
func grpcCode(status int) codes.Code {
	switch status {
	case http.StatusBadRequest:
		return codes.InvalidArgument
	case http.StatusNotFound:
		return codes.NotFound
	case http.StatusServiceUnavailable, http.StatusBadGateway:
		return codes.Unavailable
	case http.StatusGatewayTimeout:
		return codes.DeadlineExceeded
	}
	if status >= 400 && status < 500 {
		return codes.InvalidArgument
	}
	return codes.Internal
}

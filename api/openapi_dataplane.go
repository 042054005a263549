package api

// dataPlanePaths describes the OpenAI-compatible endpoints both daemons
// serve. Their bodies are OpenAI's (a compatible subset, relayed to the
// engines), so each operation describes them loosely and links OpenAI's
// specification for the rest.
func dataPlanePaths() map[string]any {
	errResp := map[string]any{"description": "An error, in OpenAI's shape.", "schema": map[string]any{"$ref": "#/definitions/" + OpenAIErrorSchema}}
	docs := func(section string) map[string]any {
		return map[string]any{"description": "OpenAI's specification of " + section, "url": OpenAISpecURL}
	}
	body := func(what string, required ...any) []any {
		return []any{map[string]any{
			"name": "body", "in": "body", "required": true, "description": what,
			"schema": map[string]any{"type": "object", "required": required, "additionalProperties": true},
		}}
	}
	object := map[string]any{"type": "object", "additionalProperties": true}
	inference := func(id, summary, section string, required ...any) map[string]any {
		return map[string]any{"post": map[string]any{
			"operationId": id, "summary": summary, "tags": []any{"OpenAI"}, "externalDocs": docs(section),
			"consumes": []any{"application/json"}, "produces": []any{"application/json", "text/event-stream"},
			"parameters": body("An OpenAI "+section+" request; the router reads the model and the prompt, the engine the rest.", required...),
			"responses": map[string]any{
				"200": map[string]any{"description": "The engine's answer (a JSON object, or server-sent events with \"stream\": true). " +
					"X-Cellrouter-Cell, X-Cellrouter-Pod and X-Cellrouter-Matched-Blocks say where it was served.", "schema": object},
				"default": errResp,
			},
		}}
	}
	return map[string]any{
		"/v1/completions":      inference("OpenAI_CreateCompletion", "Create a completion: routed to the pod holding the longest prefix of the prompt.", "completions", "model", "prompt"),
		"/v1/chat/completions": inference("OpenAI_CreateChatCompletion", "Create a chat completion: routed to the pod holding the longest prefix of the chat.", "chat completions", "model", "messages"),
		"/v1/models": map[string]any{"get": map[string]any{
			"operationId": "OpenAI_ListModels", "summary": "List the served models (from a healthy engine).", "tags": []any{"OpenAI"},
			"externalDocs": docs("models"), "produces": []any{"application/json"},
			"responses": map[string]any{"200": map[string]any{"description": "OpenAI's model list.", "schema": object}, "default": errResp},
		}},
		"/v1/models/{id}": map[string]any{"get": map[string]any{
			"operationId": "OpenAI_RetrieveModel", "summary": "Retrieve one served model.", "tags": []any{"OpenAI"},
			"externalDocs": docs("models"), "produces": []any{"application/json"},
			"parameters": []any{map[string]any{"name": "id", "in": "path", "required": true, "type": "string"}},
			"responses":  map[string]any{"200": map[string]any{"description": "OpenAI's model object.", "schema": object}, "default": errResp},
		}},
	}
}

package api

import (
	"encoding/json"
	"fmt"
	"strings"
)

// OpenAIErrorSchema is the name of the error body's definition in a served
// document: OpenAI's {"error":{"message","type","param","code"}}, which
// every endpoint answers errors with (internal/servers maps the gateway's
// errors to it), in place of grpc-gateway's rpcStatus.
const OpenAIErrorSchema = "openaiError"

// BearerScheme is the name of the API key security scheme of a served
// document.
const BearerScheme = "bearer"

// OpenAISpecURL is OpenAI's own OpenAPI description of the data plane the
// daemons serve (a compatible subset of it).
const OpenAISpecURL = "https://github.com/openai/openai-openapi"

// titles are the served documents' titles, by service.
var titles = map[string]string{
	"cell":   "cellrouter cell API (celld)",
	"global": "cellrouter global API (globald)",
	"events": "cellrouter KV event publishing API",
}

// Document returns the OpenAPI v2 document service's daemon serves: the
// committed one generated from the protos, completed with what the protos
// cannot say. It gets a title and the build's version; the API key scheme
// every path needs (Authorization: Bearer <key>); OpenAI's error body in
// place of rpcStatus; and the OpenAI-compatible data plane
// (/v1/completions, /v1/chat/completions, /v1/models), described briefly
// with a link to OpenAI's own specification. It returns an error when
// service has no document.
func Document(service, version string) ([]byte, error) {
	raw, ok := OpenAPI(service)
	if !ok {
		return nil, fmt.Errorf("api: no OpenAPI document for %q", service)
	}
	// The committed document names rpcStatus in every error response;
	// they all become OpenAI's error body.
	raw = []byte(strings.ReplaceAll(string(raw), `"#/definitions/rpcStatus"`, `"#/definitions/`+OpenAIErrorSchema+`"`))
	var doc map[string]any
	if err := json.Unmarshal(raw, &doc); err != nil {
		return nil, fmt.Errorf("api: %s document: %w", service, err)
	}
	if version == "" {
		version = "devel"
	}
	doc["info"] = map[string]any{
		"title":   titles[service],
		"version": version,
		"description": "The REST control plane (generated from api/" + service + "/v1/" + service + ".proto) and the " +
			"OpenAI-compatible data plane. Every path but /healthz and /readyz needs an API key when the daemon has a key " +
			"file (Authorization: Bearer <key>); errors are OpenAI's error body.",
	}
	doc["securityDefinitions"] = map[string]any{
		BearerScheme: map[string]any{
			"type": "apiKey", "in": "header", "name": "Authorization",
			"description": "An API key from the daemon's key file, sent as \"Bearer <key>\" (OpenAPI v2 has no bearer type).",
		},
	}
	doc["security"] = []any{map[string]any{BearerScheme: []any{}}}
	doc["externalDocs"] = map[string]any{"description": "OpenAI's API specification (the data plane)", "url": OpenAISpecURL}

	defs, _ := doc["definitions"].(map[string]any)
	if defs == nil {
		defs = map[string]any{}
		doc["definitions"] = defs
	}
	delete(defs, "rpcStatus")
	if !strings.Contains(string(raw), `"#/definitions/protobufAny"`) || onlyStatusUsesAny(raw) {
		delete(defs, "protobufAny")
	}
	defs[OpenAIErrorSchema] = openAIError()

	if service == "cell" || service == "global" {
		paths, _ := doc["paths"].(map[string]any)
		if paths == nil {
			paths = map[string]any{}
			doc["paths"] = paths
		}
		for p, item := range dataPlanePaths() {
			paths[p] = item
		}
		tags, _ := doc["tags"].([]any)
		doc["tags"] = append(tags, map[string]any{
			"name": "OpenAI", "description": "The OpenAI-compatible data plane: see OpenAI's specification for the bodies.",
			"externalDocs": map[string]any{"url": OpenAISpecURL},
		})
	}
	return json.MarshalIndent(doc, "", "  ")
}

// onlyStatusUsesAny reports whether rpcStatus is the only definition that
// refers to protobufAny (so it goes with it).
func onlyStatusUsesAny(raw []byte) bool {
	var doc struct {
		Definitions map[string]json.RawMessage `json:"definitions"`
		Paths       json.RawMessage            `json:"paths"`
	}
	if json.Unmarshal(raw, &doc) != nil {
		return false
	}
	const ref = `"#/definitions/protobufAny"`
	if strings.Contains(string(doc.Paths), ref) {
		return false
	}
	for name, d := range doc.Definitions {
		if name != "rpcStatus" && name != "protobufAny" && strings.Contains(string(d), ref) {
			return false
		}
	}
	return true
}

// openAIError is the schema of OpenAI's error body.
func openAIError() map[string]any {
	return map[string]any{
		"type":        "object",
		"description": "OpenAI's error body, which every endpoint answers errors with.",
		"required":    []any{"error"},
		"properties": map[string]any{
			"error": map[string]any{
				"type":     "object",
				"required": []any{"message", "type"},
				"properties": map[string]any{
					"message": map[string]any{"type": "string", "description": "What went wrong, for people."},
					"type":    map[string]any{"type": "string", "description": "The error class, such as invalid_request_error, authentication_error or server_error."},
					"param":   map[string]any{"type": "string", "x-nullable": true, "description": "The request parameter at fault, or null."},
					"code":    map[string]any{"description": "A machine-readable code (a string such as model_not_found, or null)."},
				},
			},
		},
	}
}

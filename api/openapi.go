package api

import (
	"embed"
	"net/http"
	"path"
)

// specs are the committed OpenAPI v2 documents api/generate.sh writes
// beside each .proto file, embedded so a daemon serves exactly what is in
// the repository.
//
//go:embed cell/v1/cell.swagger.json global/v1/global.swagger.json events/v1/events.swagger.json
var specs embed.FS

// OpenAPIPath is where a daemon serves the OpenAPI document of service
// ("cell" or "global"): /openapi/cell.swagger.json.
func OpenAPIPath(service string) string { return "/openapi/" + service + ".swagger.json" }

// OpenAPI returns the committed OpenAPI v2 document of service ("cell",
// "global" or "events"), or false when there is none.
func OpenAPI(service string) ([]byte, bool) {
	b, err := specs.ReadFile(path.Join(service, "v1", service+".swagger.json"))
	return b, err == nil
}

// OpenAPIHandler serves the OpenAPI document of service as JSON, as
// Document completes it for the build's version. It panics when service
// has none, a programming error caught at start.
func OpenAPIHandler(service, version string) http.Handler {
	doc, err := Document(service, version)
	if err != nil {
		panic(err)
	}
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write(doc)
	})
}

package api

import (
	"embed"
	"net/http"
	"path"
	"sync"
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
// Document completes it for the build's version. The document is built at
// the first request, so that a daemon's start does not wait for it. It
// panics when service has none, a programming error caught at start.
func OpenAPIHandler(service, version string) http.Handler {
	if _, ok := OpenAPI(service); !ok {
		panic("api: no OpenAPI document for " + service)
	}
	build := sync.OnceValues(func() ([]byte, error) { return Document(service, version) })
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		doc, err := build()
		if err != nil { // the committed document is not JSON: caught by the api tests
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write(doc)
	})
}

package api_test

import (
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cellrouter/cellrouter/api"
)

// TestOpenAPIEmbedsEveryCommittedSpec checks that every committed OpenAPI
// document is embedded unchanged (a new .proto's document must be added to
// the embed directive) and served as JSON.
func TestOpenAPIEmbedsEveryCommittedSpec(t *testing.T) {
	files, err := filepath.Glob("*/v1/*.swagger.json")
	if err != nil || len(files) == 0 {
		t.Fatalf("no committed specs found: %v", err)
	}
	for _, f := range files {
		service := strings.TrimSuffix(filepath.Base(f), ".swagger.json")
		want, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		got, ok := api.OpenAPI(service)
		if !ok || string(got) != string(want) {
			t.Errorf("OpenAPI(%q) = %d bytes, %v; want the %d bytes of %s", service, len(got), ok, len(want), f)
			continue
		}
		served, err := api.Document(service, "v1.2.3")
		if err != nil {
			t.Fatal(err)
		}
		rec := httptest.NewRecorder()
		api.OpenAPIHandler(service, "v1.2.3").ServeHTTP(rec, httptest.NewRequest("GET", api.OpenAPIPath(service), nil))
		if ct := rec.Header().Get("Content-Type"); rec.Code != 200 || ct != "application/json" || rec.Body.String() != string(served) {
			t.Errorf("handler of %q: %d %q %d bytes, want 200 application/json and the completed document", service, rec.Code, ct, rec.Body.Len())
		}
	}
	if _, ok := api.OpenAPI("nope"); ok {
		t.Error(`OpenAPI("nope") found a document`)
	}
}

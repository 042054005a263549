package api_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/cellrouter/cellrouter/api"
	"github.com/cellrouter/cellrouter/api/apitest"
)

// TestDocumentCompletesTheGeneratedOne checks the served documents (title,
// version, bearer scheme, OpenAI's error body, the data plane) and that
// every control-plane operation of the committed document is kept.
func TestDocumentCompletesTheGeneratedOne(t *testing.T) {
	for _, service := range []string{"cell", "global"} {
		doc, err := api.Document(service, "v1.2.3")
		if err != nil {
			t.Fatal(err)
		}
		apitest.CheckDocument(t, service, "v1.2.3", doc)
		// The committed document's control plane is all there.
		raw, _ := api.OpenAPI(service)
		var committed, served struct {
			Paths map[string]map[string]any `json:"paths"`
		}
		if err := json.Unmarshal(raw, &committed); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(doc, &served); err != nil {
			t.Fatal(err)
		}
		for p, ops := range committed.Paths {
			for op := range ops {
				if served.Paths[p][op] == nil {
					t.Errorf("%s: served document lacks %s %s", service, op, p)
				}
			}
		}
	}
	if _, err := api.Document("nope", "v1"); err == nil {
		t.Error(`Document("nope") = nil error`)
	}
	// Without a version (a test binary), the document says devel.
	doc, err := api.Document("cell", "")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(doc), `"version": "devel"`) {
		t.Error("empty version: want devel")
	}
}

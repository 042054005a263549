package apitest

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	"github.com/cellrouter/cellrouter/api"
)

// refPattern finds the document's references to its definitions.
var refPattern = regexp.MustCompile(`"#/definitions/([^"]+)"`)

// CheckDocument fails t unless doc is a served OpenAPI document of service
// as api.Document completes it: a real title and version, the bearer scheme
// required everywhere, OpenAI's error body in place of rpcStatus in every
// error response, and the data plane linking OpenAI's specification. The
// api tests and the daemons' tests (on what they serve) share it.
func CheckDocument(t testing.TB, service, version string, doc []byte) {
	t.Helper()
	var d struct {
		Info struct {
			Title, Version string
		} `json:"info"`
		SecurityDefinitions map[string]struct {
			Type, In, Name string
		} `json:"securityDefinitions"`
		Security     []map[string][]string `json:"security"`
		ExternalDocs struct{ URL string }  `json:"externalDocs"`
		Definitions  map[string]struct {
			Required   []string `json:"required"`
			Properties map[string]struct {
				Required   []string                   `json:"required"`
				Properties map[string]json.RawMessage `json:"properties"`
			} `json:"properties"`
		} `json:"definitions"`
		Paths map[string]map[string]struct {
			Responses    map[string]struct{ Schema map[string]any } `json:"responses"`
			ExternalDocs *struct{ URL string }                      `json:"externalDocs"`
		} `json:"paths"`
	}
	if err := json.Unmarshal(doc, &d); err != nil {
		t.Fatalf("%s: the document is not JSON: %v", service, err)
	}
	if d.Info.Version != version || d.Info.Version == "version not set" {
		t.Errorf("%s: info.version %q, want %q", service, d.Info.Version, version)
	}
	if !strings.HasPrefix(d.Info.Title, "cellrouter ") || strings.HasSuffix(d.Info.Title, ".proto") {
		t.Errorf("%s: info.title %q, want a real title", service, d.Info.Title)
	}
	if s := d.SecurityDefinitions[api.BearerScheme]; s.Type != "apiKey" || s.In != "header" || s.Name != "Authorization" {
		t.Errorf("%s: securityDefinitions.%s = %+v, want an apiKey in the Authorization header", service, api.BearerScheme, s)
	}
	if len(d.Security) != 1 || d.Security[0][api.BearerScheme] == nil {
		t.Errorf("%s: security = %v, want the %s scheme required", service, d.Security, api.BearerScheme)
	}
	if strings.Contains(string(doc), "rpcStatus") {
		t.Errorf("%s: the document still names rpcStatus", service)
	}
	e := d.Definitions[api.OpenAIErrorSchema]
	inner := e.Properties["error"]
	if len(e.Required) != 1 || e.Required[0] != "error" || inner.Properties["message"] == nil || inner.Properties["type"] == nil ||
		inner.Properties["code"] == nil || inner.Properties["param"] == nil {
		t.Errorf("%s: definitions.%s = %+v, want OpenAI's {\"error\":{message,type,param,code}}", service, api.OpenAIErrorSchema, e)
	}
	if d.ExternalDocs.URL != api.OpenAISpecURL {
		t.Errorf("%s: externalDocs %q, want %q", service, d.ExternalDocs.URL, api.OpenAISpecURL)
	}
	for _, p := range []struct{ path, op string }{
		{"/v1/completions", "post"}, {"/v1/chat/completions", "post"}, {"/v1/models", "get"}, {"/v1/models/{id}", "get"},
	} {
		op, ok := d.Paths[p.path][p.op]
		if !ok {
			t.Errorf("%s: no %s %s", service, p.op, p.path)
			continue
		}
		if op.ExternalDocs == nil || op.ExternalDocs.URL != api.OpenAISpecURL {
			t.Errorf("%s: %s %s links no OpenAI specification", service, p.op, p.path)
		}
	}
	for _, m := range refPattern.FindAllStringSubmatch(string(doc), -1) {
		if _, ok := d.Definitions[m[1]]; !ok {
			t.Errorf("%s: $ref to #/definitions/%s, which is not defined", service, m[1])
		}
	}
	for path, ops := range d.Paths {
		for name, op := range ops {
			if ref := op.Responses["default"].Schema["$ref"]; ref != "#/definitions/"+api.OpenAIErrorSchema {
				t.Errorf("%s: %s %s: default response %v, want OpenAI's error body", service, name, path, ref)
			}
		}
	}
}

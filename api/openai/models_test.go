package openai

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
)

// vllmModels is a GET /v1/models answer of vLLM serving a base model and a
// LoRA adapter.
const vllmModels = `{"object":"list","data":[
 {"id":"meta-llama/Llama-3.1-8B-Instruct","object":"model","created":1730000000,"owned_by":"vllm","root":"meta-llama/Llama-3.1-8B-Instruct","parent":null,"max_model_len":8192,"permission":[{"id":"modelperm-1"}]},
 {"id":"sql-lora","object":"model","created":1730000001,"owned_by":"vllm","root":"/adapters/sql","parent":"meta-llama/Llama-3.1-8B-Instruct"}]}`

func TestParseModelList(t *testing.T) {
	list, err := ParseModelList([]byte(vllmModels))
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Data) != 2 || list.Data[1].ID != "sql-lora" || *list.Data[1].Parent != "meta-llama/Llama-3.1-8B-Instruct" {
		t.Fatalf("got %+v", list)
	}
	m, ok := list.Find("meta-llama/Llama-3.1-8B-Instruct")
	if !ok || m.Created != 1730000000 || m.OwnedBy != "vllm" || m.Object != "model" {
		t.Errorf("Find: got %+v, %v", m, ok)
	}
	if _, ok := list.Find("nope"); ok {
		t.Errorf("Find(nope) found a model")
	}
	for _, bad := range []string{``, `[]`, `{"object":"list"}`, `{"data":{}}`, `{"data":[{"object":"model"}]}`, `{"data":[1]}`, `{"data":[{"id":"a"}]}x`} {
		if _, err := ParseModelList([]byte(bad)); !errors.Is(err, ErrBadModelList) {
			t.Errorf("ParseModelList(%s) = %v, want ErrBadModelList", bad, err)
		}
	}
	// A list without "object" (some engines) is accepted.
	if l, err := ParseModelList([]byte(`{"data":[{"id":"a"}]}`)); err != nil || len(l.Data) != 1 {
		t.Errorf("list without object: got %+v, %v", l, err)
	}
}

func TestWriteModel(t *testing.T) {
	rec := httptest.NewRecorder()
	WriteModel(rec, Model{ID: "m", Object: "model", Created: 7, OwnedBy: "vllm"})
	want := `{"id":"m","object":"model","created":7,"owned_by":"vllm"}`
	if rec.Code != http.StatusOK || rec.Body.String() != want || rec.Header().Get("Content-Type") != "application/json" {
		t.Errorf("got %d %s (%s), want 200 %s", rec.Code, rec.Body.String(), rec.Header().Get("Content-Type"), want)
	}
	rec = httptest.NewRecorder()
	WriteModelNotFound(rec, "gpt-9")
	var eb ErrorBody
	if err := json.Unmarshal(rec.Body.Bytes(), &eb); err != nil {
		t.Fatal(err)
	}
	if rec.Code != http.StatusNotFound || eb.Error.Type != TypeInvalidRequest || string(eb.Error.Code) != `"model_not_found"` ||
		eb.Error.Param == nil || *eb.Error.Param != "model" || eb.Error.Message != `The model "gpt-9" does not exist.` {
		t.Errorf("not found: got %d %s", rec.Code, rec.Body.String())
	}
}

// FuzzParseModelList checks that a model list is accepted only when it is
// valid JSON whose every model has an id, and that it never panics.
func FuzzParseModelList(f *testing.F) {
	for _, s := range []string{vllmModels, `{"data":[]}`, `{"data":[{"id":""}]}`, `{"data":null}`, `{"data":[{"id":"a","created":"x"}]}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		list, err := ParseModelList(data)
		if err != nil {
			if !errors.Is(err, ErrBadModelList) {
				t.Fatalf("error %v does not wrap ErrBadModelList", err)
			}
			return
		}
		if !json.Valid(data) {
			t.Fatalf("accepted invalid JSON %q", data)
		}
		for i, m := range list.Data {
			if m.ID == "" {
				t.Fatalf("accepted model %d without an id in %q", i, data)
			}
		}
	})
}

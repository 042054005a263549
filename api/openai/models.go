package openai

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
)

// ErrBadModelList means a GET /v1/models response body is not a model list.
var ErrBadModelList = errors.New("openai: bad model list")

// ParseModelList reads a GET /v1/models response body: an object whose
// "data" is an array of models, each with a non-empty "id". Fields other
// than Model's are ignored; a missing "object" is accepted (some engines
// leave it out). Errors wrap ErrBadModelList.
func ParseModelList(data []byte) (ModelList, error) {
	var raw struct {
		Object string             `json:"object"`
		Data   *[]json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(data, &raw); err != nil {
		return ModelList{}, fmt.Errorf("%w: %v", ErrBadModelList, err)
	}
	if raw.Data == nil {
		return ModelList{}, fmt.Errorf("%w: no \"data\" array", ErrBadModelList)
	}
	list := ModelList{Object: raw.Object, Data: make([]Model, 0, len(*raw.Data))}
	for i, m := range *raw.Data {
		var model Model
		if err := json.Unmarshal(m, &model); err != nil {
			return ModelList{}, fmt.Errorf("%w: data[%d]: %v", ErrBadModelList, i, err)
		}
		if model.ID == "" {
			return ModelList{}, fmt.Errorf("%w: data[%d] has no id", ErrBadModelList, i)
		}
		list.Data = append(list.Data, model)
	}
	return list, nil
}

// Find returns the model whose id is id, normalised to OpenAI's shape: its
// object is "model" whatever the engine sent.
func (l ModelList) Find(id string) (Model, bool) {
	for _, m := range l.Data {
		if m.ID == id {
			m.Object = "model"
			return m, true
		}
	}
	return Model{}, false
}

// WriteModel writes m as the 200 answer of GET /v1/models/{id}.
func WriteModel(w http.ResponseWriter, m Model) {
	data, err := json.Marshal(m)
	if err != nil { // Model holds only strings and numbers
		WriteError(w, http.StatusInternalServerError, TypeServer, "could not encode the model")
		return
	}
	writeJSON(w, http.StatusOK, data)
}

// WriteModelNotFound writes OpenAI's 404 answer for a model that does not
// exist: param "model", code "model_not_found".
func WriteModelNotFound(w http.ResponseWriter, id string) {
	WriteErrorBody(w, http.StatusNotFound, NewErrorBody(TypeInvalidRequest,
		fmt.Sprintf("The model %q does not exist.", id), "model", CodeModelNotFound))
}

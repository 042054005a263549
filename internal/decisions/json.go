package decisions

import (
	"bytes"
	"encoding/json"
	"net/http"
	"time"

	"google.golang.org/protobuf/encoding/protojson"

	"github.com/cellrouter/cellrouter/api/openai"
)

// recordJSON is a Record's JSON shape: snake_case names, durations in
// milliseconds, the explanation as protojson (the dry-run route APIs'
// shape).
type recordJSON struct {
	ID            string          `json:"id"`
	TraceID       string          `json:"trace_id,omitempty"`
	Time          time.Time       `json:"time"`
	Tenant        string          `json:"tenant,omitempty"`
	Model         string          `json:"model"`
	Path          string          `json:"path"`
	Cell          string          `json:"cell,omitempty"`
	Pod           string          `json:"pod,omitempty"`
	MatchedBlocks int             `json:"matched_blocks"`
	Blocks        int             `json:"blocks"`
	Status        int             `json:"status"`
	DecisionMs    float64         `json:"decision_ms"`
	DurationMs    float64         `json:"duration_ms"`
	Explanation   json.RawMessage `json:"explanation,omitempty"`
}

// explanationJSON is protojson with the field names of the proto files.
var explanationJSON = protojson.MarshalOptions{UseProtoNames: true}

// MarshalJSON writes the record in the shape GET /v1/<tier>/decisions
// serves.
func (r Record) MarshalJSON() ([]byte, error) {
	out := recordJSON{ID: r.ID, TraceID: r.TraceID, Time: r.Time.UTC(), Tenant: r.Tenant, Model: r.Model, Path: r.Path,
		Cell: r.Cell, Pod: r.Pod, MatchedBlocks: r.MatchedBlocks, Blocks: r.Blocks, Status: r.Status,
		DecisionMs: ms(r.Decision), DurationMs: ms(r.Duration)}
	if r.Explanation != nil {
		b, err := explanationJSON.Marshal(r.Explanation)
		if err != nil {
			return nil, err
		}
		out.Explanation = b
	}
	return json.Marshal(out)
}

// ms is d in milliseconds, to the microsecond.
func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// listJSON is the body of GET /v1/<tier>/decisions.
type listJSON struct {
	Decisions []Record `json:"decisions"`
	// Size is the ring's capacity (0: the ring is off).
	Size int `json:"size"`
}

// ServeList answers GET /v1/<tier>/decisions: the recent decisions, newest
// first, as {"decisions": [...], "size": N}. A nil ring answers an empty
// list of size 0.
func (r *Ring) ServeList(w http.ResponseWriter, _ *http.Request) {
	body := listJSON{Decisions: r.Recent()}
	if body.Decisions == nil {
		body.Decisions = []Record{}
	}
	if r != nil {
		body.Size = len(r.buf)
	}
	writeJSON(w, body)
}

// ServeOne answers GET /v1/<tier>/decisions/{id}: the record of request
// id, or 404 in OpenAI's error shape when the ring does not hold it.
func (r *Ring) ServeOne(w http.ResponseWriter, req *http.Request) {
	id := req.PathValue("id")
	rec, ok := r.Get(id)
	if !ok {
		openai.WriteErrorBody(w, http.StatusNotFound, openai.NewErrorBody(openai.TypeInvalidRequest,
			"no recent decision with id "+id+" (the ring keeps the last decisions only)", "id", openai.CodeNotFound))
		return
	}
	writeJSON(w, rec)
}

func writeJSON(w http.ResponseWriter, v any) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		openai.WriteErrorBody(w, http.StatusInternalServerError, openai.NewErrorBody(openai.TypeServer,
			"cannot encode the decisions: "+err.Error(), "", ""))
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	_, _ = w.Write(buf.Bytes())
}

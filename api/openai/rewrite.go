package openai

import (
	"bytes"
	"encoding/json"
	"unicode/utf8"
)

// Edit is one change of a top-level field of a JSON object: Value non-nil
// sets the field to Value (raw JSON), nil deletes it.
type Edit struct {
	// Key is the field name.
	Key string
	// Value is the new raw JSON value, or nil to delete the field.
	Value json.RawMessage
	// IfPresent limits a set to bodies that already have the field: an
	// absent field is not added.
	IfPresent bool
}

// Set returns an Edit that sets key to the raw JSON value.
func Set(key string, value json.RawMessage) Edit { return Edit{Key: key, Value: value} }

// Delete returns an Edit that removes key.
func Delete(key string) Edit { return Edit{Key: key} }

// field is the byte span of one top-level member of an object: from the
// key's opening quote to the end of its value.
type field struct {
	key        string
	start, end int // member span
	valStart   int // value start
}

// Rewrite applies edits to the top-level fields of the JSON object body and
// returns the new body. Every other byte of body is kept as it was: unknown
// fields, their order, numbers, escapes and whitespace. A field that occurs
// more than once (JSON allows it; decoders take the last) is set or deleted
// in every occurrence. A set field that is absent is appended at the end.
// Edit values must be valid JSON; body must be a JSON object. Rewrite never
// modifies body.
func Rewrite(body []byte, edits ...Edit) ([]byte, error) {
	for _, e := range edits {
		if !utf8.ValidString(e.Key) {
			return nil, invalid("", "edit key is not valid UTF-8")
		}
		if e.Value != nil && !json.Valid(e.Value) {
			return nil, invalid(e.Key, "replacement value is not valid JSON")
		}
	}
	fields, closeAt, err := topLevelFields(body)
	if err != nil {
		return nil, err
	}
	out := make([]byte, 0, len(body)+64)
	done := make([]bool, len(edits))
	prev := 0      // copy position in body
	wrote := false // a member has been written since '{'
	open := bytes.IndexByte(body, '{')
	out = append(out, body[:open+1]...)
	prev = open + 1
	for _, f := range fields {
		idx := lastEdit(edits, f.key)
		if idx < 0 {
			// Keep the member with the whitespace before it.
			out = appendSep(out, body[prev:f.start], wrote)
			out = append(out, body[f.start:f.end]...)
			wrote = true
			prev = f.end
			continue
		}
		done[idx] = true
		if edits[idx].Value == nil {
			prev = f.end
			continue
		}
		out = appendSep(out, body[prev:f.start], wrote)
		out = append(out, body[f.start:f.valStart]...)
		out = append(out, edits[idx].Value...)
		wrote = true
		prev = f.end
	}
	for i, e := range edits {
		if done[i] || e.Value == nil || e.IfPresent || lastEdit(edits, e.Key) != i {
			continue
		}
		if wrote {
			out = append(out, ',')
		}
		key, err := json.Marshal(e.Key)
		if err != nil {
			return nil, invalid(e.Key, "bad key: "+err.Error())
		}
		out = append(out, key...)
		out = append(out, ':')
		out = append(out, e.Value...)
		wrote = true
	}
	out = append(out, body[closeAt:]...)
	return out, nil
}

// appendSep appends the separator before a kept member: a comma when a
// member was already written, and the whitespace that preceded the member
// in the source (gap is the source between the previous member and this
// one, holding at most one comma).
func appendSep(out, gap []byte, wrote bool) []byte {
	if wrote {
		out = append(out, ',')
	}
	for _, c := range gap {
		if c != ',' {
			out = append(out, c)
		}
	}
	return out
}

// lastEdit returns the index of the last edit of key, or -1.
func lastEdit(edits []Edit, key string) int {
	for i := len(edits) - 1; i >= 0; i-- {
		if edits[i].Key == key {
			return i
		}
	}
	return -1
}

// topLevelFields validates body as a JSON object and returns the spans of
// its members and the index of its closing brace.
func topLevelFields(body []byte) ([]field, int, error) {
	if !json.Valid(body) {
		return nil, 0, invalid("", "body is not valid JSON")
	}
	i := skipSpace(body, 0)
	if i >= len(body) || body[i] != '{' {
		return nil, 0, invalid("", "request body must be a JSON object")
	}
	var fields []field
	i = skipSpace(body, i+1)
	if body[i] == '}' {
		return nil, i, nil
	}
	for {
		// body is valid JSON, so a key string starts here, and the
		// checked scanners of walk.go cannot fail.
		start := i
		end := scanString(body, i)
		key := string(body[start+1 : end-1])
		if bytes.IndexByte(body[start:end], '\\') >= 0 {
			if err := json.Unmarshal(body[start:end], &key); err != nil {
				return nil, 0, invalid("", "bad object key")
			}
		}
		i = skipSpace(body, end)
		i = skipSpace(body, i+1) // past ':'
		valStart := i
		i = skipValueChecked(body, i)
		fields = append(fields, field{key: key, start: start, end: i, valStart: valStart})
		i = skipSpace(body, i)
		if body[i] == '}' {
			return fields, i, nil
		}
		i = skipSpace(body, i+1) // past ','
	}
}

// prefillKV is the kv_transfer_params a prefill leg gets: the request's KV
// cache is to be kept for a remote decode, and nothing is to be pulled. The
// null fields are the ones vLLM's own proxies send.
var prefillKV = json.RawMessage(`{"do_remote_decode":true,"do_remote_prefill":false,"remote_engine_id":null,"remote_block_ids":null,"remote_host":null,"remote_port":null}`)

// PrefillBody returns the body of the prefill leg of a disaggregated
// request, following vLLM's protocol: max_tokens 1 (and
// max_completion_tokens 1 when the client set it), stream false,
// stream_options removed (vLLM rejects it without stream), and
// kv_transfer_params {"do_remote_decode":true,"do_remote_prefill":false,
// "remote_engine_id":null,"remote_block_ids":null,"remote_host":null,
// "remote_port":null}. Every other field is kept.
func PrefillBody(body []byte) ([]byte, error) {
	return Rewrite(body,
		Set("max_tokens", json.RawMessage("1")),
		Edit{Key: "max_completion_tokens", Value: json.RawMessage("1"), IfPresent: true},
		Set("stream", json.RawMessage("false")),
		Delete("stream_options"),
		Set("kv_transfer_params", prefillKV),
	)
}

// DecodeBody returns the body of the decode leg: the original body with
// kv_transfer_params set to the object the prefill leg returned, with
// "do_remote_prefill": true and "do_remote_decode": false forced (what
// vLLM's NixlConnector returns and expects; every other field of params,
// such as remote_engine_id, remote_block_ids, remote_host, remote_port and
// tp_size, is passed through untouched). When params is nil, null or {}
// (the prefill engine had nothing to hand over), the decode leg gets the
// original body with kv_transfer_params removed and computes the prefill
// itself, as vLLM's proxies do.
func DecodeBody(body []byte, params json.RawMessage) ([]byte, error) {
	p := bytes.TrimSpace(params)
	if len(p) == 0 || string(p) == "null" || isEmptyObject(p) {
		return Rewrite(body, Delete("kv_transfer_params"))
	}
	if p[0] != '{' {
		return nil, invalid("kv_transfer_params", "prefill returned a non-object")
	}
	kv, err := Rewrite(p, Set("do_remote_prefill", json.RawMessage("true")), Set("do_remote_decode", json.RawMessage("false")))
	if err != nil {
		return nil, err
	}
	return Rewrite(body, Set("kv_transfer_params", kv))
}

// isEmptyObject reports whether p is {} (with any inner whitespace).
func isEmptyObject(p []byte) bool {
	return p[0] == '{' && skipSpace(p, 1) == len(p)-1 && p[len(p)-1] == '}'
}

// KVTransferParams returns the kv_transfer_params of a prefill leg's
// response body, nil when absent or null.
func KVTransferParams(respBody []byte) (json.RawMessage, error) {
	var r struct {
		KV json.RawMessage `json:"kv_transfer_params"`
	}
	if err := json.Unmarshal(respBody, &r); err != nil {
		return nil, invalid("", "prefill response is not a JSON object: "+err.Error())
	}
	if isAbsent(r.KV) {
		return nil, nil
	}
	return r.KV, nil
}

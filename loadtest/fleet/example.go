package fleet

import "encoding/json"

// exampleSystem is the example chat's system message: long enough (about
// 150 tokens under the demo tokenizer, ten 16-token blocks) that the pod's
// KV events and the cells' summaries have blocks to match.
const exampleSystem = "You are the assistant of a fleet operator. The fleet runs many cells; each cell holds " +
	"a few simulated vLLM pods, and one global endpoint routes every request to the cell whose pods already " +
	"hold the longest prefix of its prompt in their KV cache. Answer in one short sentence."

// ExampleChat returns the chat request `globald --demo` prints: sent twice
// through the global endpoint, the second answer comes from the same pod
// with cached_tokens, since the global tier tokenizes the chat as the
// cells and pods do and finds the first send's blocks in a summary.
func ExampleChat(model string) []byte {
	body, _ := json.Marshal(map[string]any{
		"model": model,
		"messages": []map[string]string{
			{"role": "system", "content": exampleSystem},
			{"role": "user", "content": "Where did this request go, and why?"},
		},
		"max_tokens": 8,
	})
	return body
}

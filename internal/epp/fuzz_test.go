package epp

import (
	"bytes"
	"context"
	"testing"
)

// FuzzBodyAssembly streams a body in frames cut anywhere (the fuzzer's
// cut bytes pick the boundaries) through the server's state machine, and
// checks against the obvious model: a body within the bound reaches the
// picker whole and is passed back unchanged with one end of stream; a
// body past it is refused 413 without a pick.
func FuzzBodyAssembly(f *testing.F) {
	f.Add([]byte(chatBody), []byte{3, 10, 40})
	f.Add([]byte(`{"model":"m","prompt":"p"}`), []byte{})
	f.Add(bytes.Repeat([]byte("a"), 300), []byte{1, 1, 1, 250})
	f.Add([]byte{}, []byte{0})
	const limit = 256
	f.Fuzz(func(t *testing.T, body, cutAt []byte) {
		var frames [][]byte
		rest := body
		for _, c := range cutAt {
			n := int(c)
			if n > len(rest) {
				break
			}
			frames = append(frames, rest[:n]) // empty frames too
			rest = rest[n:]
		}
		frames = append(frames, rest)
		s, err := NewServer(Config{MaxBodyBytes: limit}, PickerFunc(func(ctx context.Context, r *Request) (*Result, error) {
			if !bytes.Equal(r.Body, body) {
				t.Fatalf("the picker got %q, want %q", r.Body, body)
			}
			return &Result{Endpoints: []string{"10.0.0.1:8000"}}, nil
		}))
		if err != nil {
			t.Fatal(err)
		}
		// A path the server does not parse: assembly alone is under test.
		st := &memStream{ctx: context.Background()}
		st.msgs = append(st.msgs, headersMsg("POST", "/raw", false))
		for i, fr := range frames {
			st.msgs = append(st.msgs, bodyMsg(fr, i == len(frames)-1))
		}
		if err := s.Process(st); err != nil {
			t.Fatal(err)
		}
		if len(body) > limit {
			if len(st.sent) != 1 || st.sent[0].GetImmediateResponse().GetStatus().GetCode() != 413 {
				t.Fatalf("a %d-byte body past %d got %v, want one 413", len(body), limit, st.sent)
			}
			return
		}
		if st.sent[0].GetRequestHeaders() == nil {
			t.Fatalf("first answer %v, want the headers answer", st.sent[0])
		}
		var got []byte
		ends := 0
		for _, r := range st.sent[1:] {
			sr := r.GetRequestBody().GetResponse().GetBodyMutation().GetStreamedResponse()
			if sr == nil {
				t.Fatalf("answer %v is not a streamed body", r)
			}
			got = append(got, sr.GetBody()...)
			if sr.GetEndOfStream() {
				ends++
			}
		}
		if !bytes.Equal(got, body) || ends != 1 || !st.sent[len(st.sent)-1].GetRequestBody().GetResponse().GetBodyMutation().GetStreamedResponse().GetEndOfStream() {
			t.Fatalf("passed back %q with %d ends, want %q with one at the end", got, ends, body)
		}
	})
}

// TestChunks checks the split of passed-back bodies against its model.
func TestChunks(t *testing.T) {
	for _, n := range []int{0, 1, 9, 10, 11, 30, 31} {
		cs := chunks(bytes.Repeat([]byte("z"), n), 10)
		total := 0
		for i, c := range cs {
			if len(c) > 10 || (len(c) < 10 && i != len(cs)-1) {
				t.Fatalf("n=%d: chunk %d has %d bytes", n, i, len(c))
			}
			total += len(c)
		}
		if want := max(1, (n+9)/10); total != n || len(cs) != want {
			t.Fatalf("n=%d: %d chunks of %d bytes, want %d chunks", n, len(cs), total, want)
		}
	}
}

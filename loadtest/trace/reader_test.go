package trace

import (
	"errors"
	"io"
	"os"
	"strings"
	"testing"
)

func TestReaderLineNumbers(t *testing.T) {
	in := strings.Join([]string{
		`{"timestamp": 0, "input_length": 5, "output_length": 1, "hash_ids": [0]}`,
		``,
		`{"timestamp": 3, "input_length": 600, "output_length": 1, "hash_ids": [0, 1]}`,
		`{"timestamp": 4, "input_length": 600, "output_length": 1, "hash_ids": [0]}`,
		`{"timestamp": 5, "input_length": 5, "output_length": 1, "hash_ids": [2]}`,
	}, "\n")
	r := NewReader(strings.NewReader(in))
	type step struct {
		line    int
		wantErr bool
	}
	want := []step{{1, false}, {3, false}, {4, true}, {5, false}}
	for i, w := range want {
		_, err := r.Next()
		if got := err != nil; got != w.wantErr {
			t.Fatalf("record %d: got error %v, want error %v", i, err, w.wantErr)
		}
		if r.Line() != w.line {
			t.Errorf("record %d: got line %d, want %d", i, r.Line(), w.line)
		}
		if err != nil {
			var le *LineError
			if !errors.As(err, &le) || le.Line != w.line || !errors.Is(err, ErrBadValue) {
				t.Errorf("record %d: got error %v, want a *LineError for line %d wrapping ErrBadValue", i, err, w.line)
			}
			if !strings.HasPrefix(err.Error(), "trace: line 4: ") {
				t.Errorf("got message %q, want prefix %q", err.Error(), "trace: line 4: ")
			}
		}
	}
	if _, err := r.Next(); err != io.EOF {
		t.Errorf("got %v at the end, want io.EOF", err)
	}
}

func TestReadAllOrderAndLimit(t *testing.T) {
	in := `{"timestamp": 5, "input_length": 5, "output_length": 1, "hash_ids": [0]}
{"timestamp": 4, "input_length": 5, "output_length": 1, "hash_ids": [0]}`
	if _, err := ReadAll(strings.NewReader(in), 0); !errors.Is(err, ErrBadValue) {
		t.Errorf("ReadAll of a decreasing timestamp got %v, want ErrBadValue", err)
	}
	recs, err := ReadAll(strings.NewReader(in), 1)
	if err != nil || len(recs) != 1 {
		t.Errorf("ReadAll(max 1) got %d records, %v, want 1, nil", len(recs), err)
	}
}

func TestReadFileSmall(t *testing.T) {
	recs, err := ReadFile("../../testdata/mooncake_small.jsonl", 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 300 {
		t.Fatalf("got %d records, want 300", len(recs))
	}
	if recs[0].HashIDs[0] != 0 || len(recs[0].HashIDs) != 14 {
		t.Errorf("got first record %+v, want 14 ids starting with 0", recs[0])
	}
	if _, err := ReadFile("does-not-exist.jsonl", 0); err == nil {
		t.Error("ReadFile of a missing file got nil error")
	}
}

func TestReadFileReportsPathAndLine(t *testing.T) {
	dir := t.TempDir()
	path := dir + "/bad.jsonl"
	body := `{"timestamp": 0, "input_length": 5, "output_length": 1, "hash_ids": [0]}
{"timestamp": 1, "input_length": 5, "output_length": 1, "hash_ids": []}
`
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := ReadFile(path, 0)
	want := "trace: " + path + ":2: bad value: hash_ids is empty"
	if err == nil || err.Error() != want {
		t.Errorf("ReadFile got error %v, want %q", err, want)
	}
}

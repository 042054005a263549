package eventlog

import (
	"bytes"
	"errors"
	"reflect"
	"testing"
)

func TestRoundTrip(t *testing.T) {
	recs := []Record{
		{Pod: "10.0.0.1:8000", Model: "llama", Seq: 0, Payload: []byte{0x93, 1, 2, 3}},
		{Pod: "p", Model: "", Seq: 1 << 40, Payload: nil},
	}
	var buf bytes.Buffer
	w, err := NewWriter(&buf)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		if err := w.Write(r); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	got, err := ReadAll(&buf)
	if err != nil {
		t.Fatal(err)
	}
	recs[1].Payload = []byte{}
	if !reflect.DeepEqual(got, recs) {
		t.Fatalf("got %+v, want %+v", got, recs)
	}
}

func TestMalformed(t *testing.T) {
	var good bytes.Buffer
	w, _ := NewWriter(&good)
	w.Write(Record{Pod: "p", Seq: 3, Payload: []byte("abc")})
	w.Flush()
	tests := []struct {
		name string
		data []byte
	}{
		{"empty", nil},
		{"bad magic", []byte("NOTALOG!")},
		{"truncated", good.Bytes()[:good.Len()-1]},
		{"huge field", append([]byte(Magic), 0xff, 0xff, 0xff, 0xff, 0x0f)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := ReadAll(bytes.NewReader(tt.data)); !errors.Is(err, ErrFormat) {
				t.Fatalf("ReadAll = %v, want ErrFormat", err)
			}
		})
	}
}

// FuzzReadAll checks that any input is read or rejected with ErrFormat,
// never a panic, and that what is read writes back to the same bytes.
func FuzzReadAll(f *testing.F) {
	var buf bytes.Buffer
	w, _ := NewWriter(&buf)
	w.Write(Record{Pod: "pod", Model: "m", Seq: 7, Payload: []byte{0x93, 0xcb, 0, 0, 0, 0, 0, 0, 0, 0, 0x90, 0xc0}})
	w.Flush()
	f.Add(buf.Bytes())
	f.Add([]byte(Magic))
	f.Fuzz(func(t *testing.T, data []byte) {
		recs, err := ReadAll(bytes.NewReader(data))
		if err != nil {
			if !errors.Is(err, ErrFormat) {
				t.Fatalf("error %v is not ErrFormat", err)
			}
			return
		}
		var out bytes.Buffer
		w, _ := NewWriter(&out)
		for _, r := range recs {
			if err := w.Write(r); err != nil {
				t.Fatal(err)
			}
		}
		w.Flush()
		again, err := ReadAll(&out)
		if err != nil || len(again) != len(recs) {
			t.Fatalf("re-read %d records, err %v; want %d", len(again), err, len(recs))
		}
	})
}

package trace

import (
	"bytes"
	"os"
	"testing"
)

func BenchmarkReadAll(b *testing.B) {
	data, err := os.ReadFile("../../testdata/mooncake_small.jsonl")
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if _, err := ReadAll(bytes.NewReader(data), 0); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkAppendTokens(b *testing.B) {
	buf := make([]uint32, 0, TokensPerID)
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		buf = AppendTokens(buf[:0], uint64(i))
	}
}

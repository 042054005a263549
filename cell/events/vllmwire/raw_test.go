package vllmwire

import (
	"bytes"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/vmihailenco/msgpack/v5"
)

// TestScanIntMatchesDecoder checks the hand-written integer scanner against
// the msgpack library's Decoder, for every integer encoding the library
// writes, on random and boundary values.
func TestScanIntMatchesDecoder(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	values := []uint64{0, 1, 127, 128, 255, 256, math.MaxUint16, math.MaxUint16 + 1, math.MaxUint32, math.MaxUint32 + 1,
		math.MaxInt64, 1 << 63, math.MaxUint64, uint64(1<<64 - 32), uint64(1<<64 - 33)}
	for i := 0; i < 500; i++ {
		values = append(values, rng.Uint64()>>(rng.IntN(64)))
	}
	var buf bytes.Buffer
	enc := msgpack.NewEncoder(&buf)
	encoders := []func(v uint64){
		func(v uint64) { _ = enc.EncodeUint(v) },
		func(v uint64) { _ = enc.EncodeInt(int64(v)) },
		func(v uint64) { _ = enc.EncodeUint64(v) },
		func(v uint64) { _ = enc.EncodeInt64(int64(v)) },
		func(v uint64) { _ = enc.EncodeUint32(uint32(v)) },
		func(v uint64) { _ = enc.EncodeInt32(int32(v)) },
		func(v uint64) { _ = enc.EncodeUint16(uint16(v)) },
		func(v uint64) { _ = enc.EncodeInt16(int16(v)) },
		func(v uint64) { _ = enc.EncodeUint8(uint8(v)) },
		func(v uint64) { _ = enc.EncodeInt8(int8(v)) },
	}
	for _, v := range values {
		for ei, encode := range encoders {
			buf.Reset()
			encode(v)
			p := buf.Bytes()
			want, err := msgpack.NewDecoder(bytes.NewReader(p)).DecodeUint64()
			if err != nil {
				t.Fatalf("reference decode of %x: %v", p, err)
			}
			got, neg, next, ok := scanInt(p, 0)
			if !ok || next != len(p) || got != want || neg != (p[0] >= 0xd0 && p[0] <= 0xd3 || p[0] >= 0xe0) && int64(want) < 0 {
				t.Errorf("encoder %d, value %d (%x): got %d neg=%v next=%d ok=%v, want %d next=%d", ei, v, p, got, neg, next, ok, want, len(p))
			}
			if len(p) > 1 {
				if _, _, next, _ := scanInt(p[:len(p)-1], 0); next != 0 {
					t.Errorf("truncated %x: got next %d, want 0", p[:len(p)-1], next)
				}
			}
		}
	}
}

// randomValue builds a random msgpack-encodable tree of the given depth.
func randomValue(rng *rand.Rand, depth int) any {
	switch k := rng.IntN(10); {
	case depth > 0 && k == 0:
		n := rng.IntN(20)
		out := make([]any, n)
		for i := range out {
			out[i] = randomValue(rng, depth-1)
		}
		return out
	case depth > 0 && k == 1:
		n := rng.IntN(20)
		out := make(map[string]any, n)
		for i := 0; i < n; i++ {
			out[string(rune('a'+i))] = randomValue(rng, depth-1)
		}
		return out
	case k == 2:
		return string(make([]byte, rng.IntN(300)))
	case k == 3:
		return make([]byte, rng.IntN(70000))
	case k == 4:
		return rng.Float64()
	case k == 5:
		return float32(rng.Float64())
	case k == 6:
		return nil
	case k == 7:
		return rng.IntN(2) == 0
	case k == 8:
		return -rng.Int64()
	}
	return rng.Uint64() >> rng.IntN(64)
}

// TestSkipMatchesDecoder checks skipAt against the library's Decoder.Skip on
// random nested values, and that it finds every truncation.
func TestSkipMatchesDecoder(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for i := 0; i < 300; i++ {
		p, err := msgpack.Marshal(randomValue(rng, 4))
		if err != nil {
			t.Fatal(err)
		}
		p = append(p, 0xc0) // one more value after, so the offset matters
		br := bytes.NewReader(p)
		if err := msgpack.NewDecoder(br).Skip(); err != nil {
			t.Fatalf("reference skip: %v", err)
		}
		want := len(p) - br.Len()
		got, err := skipAt(p, 0, 0, 16)
		if err != nil || got != want {
			t.Fatalf("skipAt(%d bytes): got %d, %v, want %d", len(p), got, err, want)
		}
		cut := rng.IntN(want)
		if _, err := skipAt(p[:cut], 0, 0, 16); Reason(err) != "msgpack" {
			t.Errorf("skipAt(truncated to %d of %d): got %v, want a msgpack error", cut, want, err)
		}
	}
}

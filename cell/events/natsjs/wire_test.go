package natsjs

import (
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/nats-io/nats.go"
)

// hdr builds a header from key, value pairs.
func hdr(kv ...string) nats.Header {
	h := nats.Header{}
	for i := 0; i+1 < len(kv); i += 2 {
		h.Add(kv[i], kv[i+1])
	}
	return h
}

func TestParseHeaders(t *testing.T) {
	for _, tc := range []struct {
		name    string
		h       nats.Header
		want    Meta
		wantErr bool
	}{
		{"minimal", hdr(HeaderPod, "p1", HeaderSeq, "0"), Meta{Pod: "p1", Seq: 0, DPRank: -1}, false},
		{"all", hdr(HeaderPod, "10.0.0.1:8000", HeaderModel, "meta/llama@v1", HeaderSeq, "18446744073709551615", HeaderDPRank, "3"),
			Meta{Pod: "10.0.0.1:8000", Model: "meta/llama@v1", Seq: 1<<64 - 1, DPRank: 3}, false},
		{"leading zeros", hdr(HeaderPod, "p", HeaderSeq, "007"), Meta{Pod: "p", Seq: 7, DPRank: -1}, false},
		{"max rank", hdr(HeaderPod, "p", HeaderSeq, "1", HeaderDPRank, "65535"), Meta{Pod: "p", Seq: 1, DPRank: 65535}, false},
		{"nil header", nil, Meta{}, true},
		{"no pod", hdr(HeaderSeq, "1"), Meta{}, true},
		{"empty pod", hdr(HeaderPod, "", HeaderSeq, "1"), Meta{}, true},
		{"lowercase key is another header", hdr("kv-pod", "p", HeaderSeq, "1"), Meta{}, true},
		{"two pods", hdr(HeaderPod, "a", HeaderPod, "b", HeaderSeq, "1"), Meta{}, true},
		{"pod control char", hdr(HeaderPod, "p\n", HeaderSeq, "1"), Meta{}, true},
		{"pod too long", hdr(HeaderPod, strings.Repeat("p", MaxPodLen+1), HeaderSeq, "1"), Meta{}, true},
		{"no seq", hdr(HeaderPod, "p"), Meta{}, true},
		{"empty seq", hdr(HeaderPod, "p", HeaderSeq, ""), Meta{}, true},
		{"signed seq", hdr(HeaderPod, "p", HeaderSeq, "+1"), Meta{}, true},
		{"negative seq", hdr(HeaderPod, "p", HeaderSeq, "-1"), Meta{}, true},
		{"hex seq", hdr(HeaderPod, "p", HeaderSeq, "0x10"), Meta{}, true},
		{"underscore seq", hdr(HeaderPod, "p", HeaderSeq, "1_000"), Meta{}, true},
		{"seq overflow", hdr(HeaderPod, "p", HeaderSeq, "18446744073709551616"), Meta{}, true},
		{"seq spaces", hdr(HeaderPod, "p", HeaderSeq, " 1"), Meta{}, true},
		{"two seqs", hdr(HeaderPod, "p", HeaderSeq, "1", HeaderSeq, "2"), Meta{}, true},
		{"rank too big", hdr(HeaderPod, "p", HeaderSeq, "1", HeaderDPRank, "65536"), Meta{}, true},
		{"rank negative", hdr(HeaderPod, "p", HeaderSeq, "1", HeaderDPRank, "-1"), Meta{}, true},
		{"rank empty", hdr(HeaderPod, "p", HeaderSeq, "1", HeaderDPRank, ""), Meta{}, true},
		{"model control char", hdr(HeaderPod, "p", HeaderModel, "m\x00", HeaderSeq, "1"), Meta{}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseHeaders(tc.h)
			if tc.wantErr {
				if !errors.Is(err, ErrHeader) {
					t.Fatalf("ParseHeaders err = %v, want ErrHeader", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseHeaders err = %v, want nil", err)
			}
			if got != tc.want {
				t.Fatalf("ParseHeaders = %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestSetHeadersRoundTrip(t *testing.T) {
	for _, want := range []Meta{
		{Pod: "p", Seq: 0, DPRank: -1},
		{Pod: "10.1.2.3:9000", Model: "Qwen/Qwen3-8B", Seq: 42, DPRank: 0},
		{Pod: "pod-7", Seq: 1<<64 - 1, DPRank: MaxDPRank},
	} {
		h := nats.Header{}
		SetHeaders(h, want.Pod, want.Model, want.Seq, want.DPRank)
		got, err := ParseHeaders(h)
		if err != nil || got != want {
			t.Errorf("ParseHeaders(SetHeaders(%+v)) = %+v, %v; want %+v, nil", want, got, err, want)
		}
	}
}

func TestPodToken(t *testing.T) {
	for _, tc := range []struct{ pod, want string }{
		{"pod-1_a", "pod-1_a"},
		{"10.0.0.5:8000", "10%2E0%2E0%2E5%3A8000"},
		{"a b*c>d", "a%20b%2Ac%3Ed"},
		{"%", "%25"},
		{"", "%"},
		{"é", "%C3%A9"},
	} {
		if got := PodToken(tc.pod); got != tc.want {
			t.Errorf("PodToken(%q) = %q, want %q", tc.pod, got, tc.want)
		}
	}
	if got, want := Subject(DefaultSubjectPrefix, "a.b"), "kv.events.a%2Eb"; got != want {
		t.Errorf("Subject = %q, want %q", got, want)
	}
}

// unescapeToken inverts PodToken for the injectivity check.
func unescapeToken(tok string) (string, bool) {
	if tok == "%" {
		return "", true
	}
	var b strings.Builder
	for i := 0; i < len(tok); i++ {
		if tok[i] != '%' {
			b.WriteByte(tok[i])
			continue
		}
		if i+2 >= len(tok) {
			return "", false
		}
		v, err := strconv.ParseUint(tok[i+1:i+3], 16, 8)
		if err != nil {
			return "", false
		}
		b.WriteByte(byte(v))
		i += 2
	}
	return b.String(), true
}

func FuzzPodToken(f *testing.F) {
	for _, s := range []string{"", "pod", "10.0.0.5:8000", "%", "%25", "a.b.>", "*", "\x00\xff", "é"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, pod string) {
		tok := PodToken(pod)
		for i := 0; i < len(tok); i++ {
			if c := tok[i]; !tokenSafe(c) && c != '%' {
				t.Fatalf("PodToken(%q) = %q has byte %q", pod, tok, c)
			}
		}
		back, ok := unescapeToken(tok)
		if !ok || back != pod {
			t.Fatalf("unescape(PodToken(%q)) = %q, %t; want the pod back", pod, back, ok)
		}
		if !validSubject(Subject(DefaultSubjectPrefix, pod)) {
			t.Fatalf("Subject for %q is not a valid subject", pod)
		}
	})
}

func FuzzParseHeaders(f *testing.F) {
	f.Add("p1", "m", "0", "", uint8(0x0b))
	f.Add("10.0.0.1:8000", "Qwen/Qwen3", "18446744073709551615", "7", uint8(0x0f))
	f.Add("p", "", "18446744073709551616", "65536", uint8(0x0f))
	f.Add("p", "", "-1", "x", uint8(0x3f))
	f.Add("", "\x00", "+3", "", uint8(0xff))
	f.Fuzz(func(t *testing.T, pod, model, seq, rank string, flags uint8) {
		h := nats.Header{}
		vals := [4]struct{ key, v string }{{HeaderPod, pod}, {HeaderModel, model}, {HeaderSeq, seq}, {HeaderDPRank, rank}}
		for i, kv := range vals {
			if flags&(1<<i) != 0 {
				h.Add(kv.key, kv.v)
				if flags&(1<<(i+4)) != 0 {
					h.Add(kv.key, kv.v) // repeated header
				}
			}
		}
		m, err := ParseHeaders(h)
		if err != nil {
			if !errors.Is(err, ErrHeader) {
				t.Fatalf("error %v does not wrap ErrHeader", err)
			}
			return
		}
		// Accepted: the values are the headers', the numbers are what
		// strconv says, and SetHeaders writes them back identically.
		if m.Pod != pod || m.Pod == "" {
			t.Fatalf("Pod = %q from %q", m.Pod, pod)
		}
		if n, perr := strconv.ParseUint(seq, 10, 64); perr != nil || n != m.Seq {
			t.Fatalf("Seq = %d from %q (strconv: %d, %v)", m.Seq, seq, n, perr)
		}
		if flags&8 == 0 && m.DPRank != -1 {
			t.Fatalf("DPRank = %d without the header", m.DPRank)
		}
		if m.DPRank > MaxDPRank || m.DPRank < -1 {
			t.Fatalf("DPRank = %d out of range", m.DPRank)
		}
		h2 := nats.Header{}
		SetHeaders(h2, m.Pod, m.Model, m.Seq, m.DPRank)
		m2, err := ParseHeaders(h2)
		if err != nil || m2 != m {
			t.Fatalf("round trip: %+v, %v; want %+v", m2, err, m)
		}
	})
}

package tokenizer

import (
	"encoding/json"
	"os"
	"slices"
	"testing"
)

// goldenCase is one line of a golden file written by testdata/oracle.mjs.
type goldenCase struct {
	Text       string   `json:"text"`
	IDs        []uint32 `json:"ids"`
	IDsSpecial []uint32 `json:"ids_special"`
}

// checkGolden encodes every case of the golden file with tok and compares
// with the oracle's ids, reporting at most a few mismatches.
func checkGolden(t *testing.T, tok *BPE, goldenPath string) {
	t.Helper()
	data, err := os.ReadFile(goldenPath)
	if err != nil {
		t.Fatal(err)
	}
	var cases []goldenCase
	if err := json.Unmarshal(data, &cases); err != nil {
		t.Fatal(err)
	}
	if len(cases) == 0 {
		t.Fatalf("%s has no cases", goldenPath)
	}
	bad := 0
	for _, c := range cases {
		got := tok.EncodeString(c.Text, false, nil)
		gotSp := tok.EncodeString(c.Text, true, nil)
		if !slices.Equal(got, c.IDs) || !slices.Equal(gotSp, c.IDsSpecial) {
			bad++
			if bad <= 5 {
				t.Errorf("Encode(%q):\n got %v\nwant %v\n special got %v\n special want %v", c.Text, got, c.IDs, gotSp, c.IDsSpecial)
			}
		}
	}
	if bad > 0 {
		t.Errorf("%d of %d cases differ from the oracle", bad, len(cases))
	}
	t.Logf("%d cases match the oracle", len(cases)-bad)
}

// TestOracleGolden compares the tokenizer on each fixture with the ids that
// Hugging Face's JavaScript tokenizers port produced for the same
// tokenizer.json (testdata/NAME.golden.json, written by testdata/oracle.mjs):
// hand-written tricky texts and seeded random ones.
func TestOracleGolden(t *testing.T) {
	for _, f := range fixtures {
		t.Run(f.name, func(t *testing.T) {
			checkGolden(t, loadFixture(t, f.name, Options{}), "testdata/"+f.name+".golden.json")
		})
	}
}

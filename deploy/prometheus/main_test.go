package prometheus

import (
	"fmt"
	"os"
	"testing"
)

// TestMain closes the demo fleet the tests started, if any.
func TestMain(m *testing.M) {
	code := m.Run()
	if demo.f != nil {
		if err := demo.f.Close(); err != nil {
			fmt.Fprintln(os.Stderr, "closing the demo fleet:", err)
			if code == 0 {
				code = 1
			}
		}
	}
	os.Exit(code)
}

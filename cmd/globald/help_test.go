package main

import (
	"bytes"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestHelpExitsZero runs the binary's main in a child process with each
// request for help: it prints the usage and exits 0.
func TestHelpExitsZero(t *testing.T) {
	if args := os.Getenv("CELLROUTER_TEST_MAIN_ARGS"); args != "" {
		os.Args = append([]string{"globald"}, strings.Fields(args)...)
		main()
		return
	}
	for _, tc := range []struct {
		args string
		want []string // in stdout or stderr
	}{
		{"--help", []string{"Usage of globald:", "-log-format", "-access-log-sample", "-demo"}},
		{"-h", []string{"Usage of globald:"}},
		{"keygen --help", []string{"Usage of globald keygen:", "-tenant"}},
	} {
		cmd := exec.Command(os.Args[0], "-test.run=^TestHelpExitsZero$")
		cmd.Env = append(os.Environ(), "CELLROUTER_TEST_MAIN_ARGS="+tc.args)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil {
			t.Errorf("globald %s: %v (want exit 0); stderr %q", tc.args, err, stderr.String())
			continue
		}
		if strings.Contains(stderr.String(), "help requested") {
			t.Errorf("globald %s: stderr %q reports help as an error", tc.args, stderr.String())
		}
		for _, w := range tc.want {
			if !strings.Contains(stdout.String()+stderr.String(), w) {
				t.Errorf("globald %s: output lacks %q: %s%s", tc.args, w, stdout.String(), stderr.String())
			}
		}
	}
}

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
		os.Args = append([]string{"loadtest"}, strings.Fields(args)...)
		main()
		return
	}
	for _, tc := range []struct {
		args string
		want []string // in stdout or stderr
	}{
		{"--help", []string{"usage: loadtest <command>", "enginesim"}},
		{"run -h", []string{"Usage of run:", "-json"}},
		{"compare --help", []string{"Usage of compare:"}},
		{"eventlog -h", []string{"Usage of eventlog:"}},
		{"enginesim --help", []string{"Usage of enginesim:", "-log-format"}},
	} {
		cmd := exec.Command(os.Args[0], "-test.run=^TestHelpExitsZero$")
		cmd.Env = append(os.Environ(), "CELLROUTER_TEST_MAIN_ARGS="+tc.args)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil {
			t.Errorf("loadtest %s: %v (want exit 0); stderr %q", tc.args, err, stderr.String())
			continue
		}
		if strings.Contains(stderr.String(), "help requested") {
			t.Errorf("loadtest %s: stderr %q reports help as an error", tc.args, stderr.String())
		}
		for _, w := range tc.want {
			if !strings.Contains(stdout.String()+stderr.String(), w) {
				t.Errorf("loadtest %s: output lacks %q: %s%s", tc.args, w, stdout.String(), stderr.String())
			}
		}
	}
}

package prometheus

import (
	"os/exec"
	"testing"
)

// tool returns the path of a Prometheus binary, or skips the test saying
// how to get it.
func tool(t *testing.T, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		t.Skipf("%s is not installed (Debian: apt-get install -y prometheus): %v", name, err)
	}
	return p
}

// TestPromtoolChecksAndTestsRules runs `promtool check rules` on the rules
// and `promtool test rules` on their unit tests (cellrouter-rules.test.yml:
// every alert fires on the series it is for, and not on the healthy ones).
func TestPromtoolChecksAndTestsRules(t *testing.T) {
	promtool := tool(t, "promtool")
	for _, args := range [][]string{{"check", "rules", rulesFile}, {"test", "rules", "cellrouter-rules.test.yml"}} {
		out, err := exec.Command(promtool, args...).CombinedOutput()
		if err != nil {
			t.Errorf("promtool %v: %v\n%s", args, err, out)
		}
	}
}

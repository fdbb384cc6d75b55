package client_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// examples/gate, built and run as the README says, against the in-process
// bot; a reviewer lowers the replicas and the program prints the verdict.
func TestGateExampleRuns(t *testing.T) {
	t.Parallel()
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("the go command is not on PATH")
	}
	bin := filepath.Join(t.TempDir(), "gate")
	if out, err := exec.Command(goTool, "build", "-o", bin, "../examples/gate").CombinedOutput(); err != nil {
		t.Fatalf("go build ./examples/gate: %v\n%s", err, out)
	}
	b := startBot(t)
	cmd := exec.Command(bin)
	cmd.Env = append(os.Environ(), "APPROVALBOT_URL="+b.url, "APPROVALBOT_TOKEN="+agentToken)
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	var ids []string
	for deadline := time.Now().Add(guard); len(ids) == 0; time.Sleep(20 * time.Millisecond) {
		if ids = listIDs(t, b); time.Now().After(deadline) {
			t.Fatal("the example never submitted its request")
		}
	}
	b.decide(ids[0], "modify", bobToken, `{"decision_id": "action", "parameters": {"replicas": 8}}`)
	select {
	case err := <-done:
		// What it asks and where to answer, then the verdict.
		lines := strings.Split(strings.TrimSpace(out.String()), "\n")
		if err != nil || len(lines) != 2 || !strings.HasPrefix(lines[0], "asking "+b.url) ||
			lines[1] != "modified map[replicas:8 service:checkout-api]" {
			t.Errorf("the example: %v, printed %q", err, out.String())
		}
	case <-time.After(guard):
		t.Fatal("the example never printed its verdict")
	}
}

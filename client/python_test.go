package client_test

import (
	"bufio"
	"encoding/base64"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
)

// The Python example (examples/python), run by python3 when it is on PATH.

var pythonExample = filepath.Join("..", "examples", "python", "approvalbot_example.py")

func python(t *testing.T) string {
	t.Helper()
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 is not on PATH")
	}
	return py
}

// startPython runs the example with args and returns a reader of its
// output lines; the process is killed when the test ends.
func startPython(t *testing.T, py string, args ...string) (*bufio.Scanner, func() error) {
	t.Helper()
	cmd := exec.Command(py, append([]string{pythonExample}, args...)...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if t.Failed() && stderr.Len() > 0 {
			t.Logf("python %v stderr:\n%s", args, stderr.String())
		}
	})
	return bufio.NewScanner(out), func() error { return cmd.Wait() }
}

func nextLine(t *testing.T, sc *bufio.Scanner, what string) string {
	t.Helper()
	line := make(chan string, 1)
	go func() {
		if sc.Scan() {
			line <- sc.Text()
		}
		close(line)
	}()
	select {
	case l, ok := <-line:
		if !ok {
			t.Fatalf("python ended before %s", what)
		}
		return l
	case <-time.After(guard):
		t.Fatalf("python never printed %s", what)
	}
	return ""
}

// The example submits to the in-process bot, long-polls, and its receiver
// verifies the decision response the bot signed and POSTed.
func TestPythonExampleRoundTrip(t *testing.T) {
	t.Parallel()
	py := python(t)
	b := startBot(t)
	recv, _ := startPython(t, py, "serve", "--port", "0", "--once", "--secret", testSecret)
	port, ok := strings.CutPrefix(nextLine(t, recv, "its port"), "listening on ")
	if !ok {
		t.Fatal("the receiver did not say its port")
	}
	ask, _ := startPython(t, py, "--bot", b.url, "--token", agentToken, "--id", "py-1",
		"--response-url", "http://127.0.0.1:"+port+"/decisions")
	if l := nextLine(t, ask, "the submission"); !strings.HasPrefix(l, "submitted py-1 ") {
		t.Fatalf("ask printed %q", l)
	}
	b.decide("py-1", "answers", aliceToken, `{"answers": {"go": true}}`)
	if l := nextLine(t, ask, "the decision"); l != "resolved all_approved" {
		t.Errorf("ask printed %q", l)
	}
	if l := nextLine(t, recv, "the verified response"); l != "verified py-1 all_approved" {
		t.Errorf("the receiver printed %q", l)
	}
}

// verify_signature accepts what the Go Standard Webhooks library (the
// bot's) signs, and refuses a tampered body, another secret, a stale or
// future timestamp and a missing header.
func TestPythonVerifiesGoSignatures(t *testing.T) {
	t.Parallel()
	py := python(t)
	wh, err := standardwebhooks.NewWebhook(testSecret)
	if err != nil {
		t.Fatal(err)
	}
	other, _ := standardwebhooks.NewWebhook("whsec_b3RoZXItc2VjcmV0LW9mLXNvbWVvbmUtZWxzZQ==")
	body := sampleResponse(t)
	now := time.Now()
	type tc struct {
		Name    string            `json:"name"`
		Headers map[string]string `json:"headers"`
		Body    string            `json:"body"` // base64
		Want    bool              `json:"want"`
	}
	sign := func(name string, w *standardwebhooks.Webhook, ts time.Time, signedBody, sentBody []byte, want bool) tc {
		sig, err := w.Sign("msg_"+name, ts, signedBody)
		if err != nil {
			t.Fatal(err)
		}
		return tc{Name: name, Want: want, Body: base64.StdEncoding.EncodeToString(sentBody), Headers: map[string]string{
			"Webhook-Id": "msg_" + name, "Webhook-Timestamp": strconv.FormatInt(ts.Unix(), 10), "Webhook-Signature": sig}}
	}
	tampered := []byte(strings.Replace(string(body), `"approved":true`, `"approved":false`, 1))
	cases := []tc{
		sign("good", wh, now, body, body, true),
		sign("tampered", wh, now, body, tampered, false),
		sign("other-secret", other, now, body, body, false),
		sign("stale", wh, now.Add(-10*time.Minute), body, body, false),
		sign("future", wh, now.Add(10*time.Minute), body, body, false),
	}
	several := sign("several", wh, now, body, body, true) // a rotated key: one of several signatures matches
	several.Headers["Webhook-Signature"] = "v1,c29tZXRoaW5nIGVsc2U= " + several.Headers["Webhook-Signature"]
	missing := sign("missing", wh, now, body, body, false)
	delete(missing.Headers, "Webhook-Signature")
	cases = append(cases, several, missing)
	in, _ := json.Marshal(map[string]any{"secret": testSecret, "cases": cases})

	script := `
import base64, json, sys
sys.path.insert(0, sys.argv[1])
from approvalbot_example import verify_signature
doc = json.load(sys.stdin)
for c in doc["cases"]:
    try:
        ok = verify_signature(doc["secret"], c["headers"], base64.b64decode(c["body"]))
    except ValueError as e:
        ok = False
    print(c["name"], ok)
`
	cmd := exec.Command(py, "-c", script, filepath.Dir(pythonExample))
	cmd.Stdin = strings.NewReader(string(in))
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("python: %v\n%s", err, out)
	}
	got := map[string]string{}
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		name, v, _ := strings.Cut(l, " ")
		got[name] = v
	}
	for _, c := range cases {
		want := map[bool]string{true: "True", false: "False"}[c.Want]
		if got[c.Name] != want {
			t.Errorf("%s: verify_signature says %q, want %s", c.Name, got[c.Name], want)
		}
	}
}

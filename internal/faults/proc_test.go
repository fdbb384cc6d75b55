package faults

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// guard bounds every wait for something that must happen. It only stops a
// hung test: nothing is asserted about how long anything took, so it is
// generous for a saturated 2-core machine running the race detector. The
// full form raises it (sizeFromEnv): after a kill with a hundred posts in
// flight, every retry and every sweep reads the channel's history, which
// the emulator serves one call at a time, and on a saturated machine that
// has taken minutes.
var guard = 3 * time.Minute

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
	buildDir  string
)

func TestMain(m *testing.M) {
	code := m.Run()
	if buildDir != "" {
		_ = os.RemoveAll(buildDir)
	}
	os.Exit(code)
}

// approvalbotBinary builds ./cmd/approvalbot once per test run (with -race
// when this test binary has it) and returns its path.
func approvalbotBinary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		goBin, err := exec.LookPath("go")
		if err != nil { // go test was run by path, not from PATH
			goBin = filepath.Join(os.Getenv("GOROOT"), "bin", "go")
		}
		if buildDir, buildErr = os.MkdirTemp("", "approvalbot-faults-"); buildErr != nil {
			return
		}
		binPath = filepath.Join(buildDir, "approvalbot")
		args := []string{"build", "-o", binPath}
		if raceEnabled {
			args = append(args, "-race")
		}
		args = append(args, "github.com/approvalbot/approvalbot/cmd/approvalbot")
		cmd := exec.Command(goBin, args...)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Run(); err != nil {
			buildErr = fmt.Errorf("go %s: %v\n%s", strings.Join(args, " "), err, out.Bytes())
		}
	})
	if buildErr != nil {
		t.Fatalf("build the bot: %v", buildErr)
	}
	return binPath
}

// botProc is one approvalbot process, restartable on the same port.
type botProc struct {
	t    *testing.T
	name string
	url  string // http://127.0.0.1:port
	addr string
	env  []string
	log  string // its stderr, every incarnation appended
	bin  string

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{}
	runs int
}

// startBot starts a bot process with the world's configuration plus extra
// KEY=value settings, and waits until it is ready.
func (w *world) startBot(name string, extra ...string) *botProc {
	w.t.Helper()
	port, err := freePort()
	if err != nil {
		w.t.Fatal(err)
	}
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	env := []string{
		"LISTEN_ADDR=" + addr,
		"REDIS_URL=redis://" + w.redis.Addr + "/0",
		"SLACK_BOT_TOKEN=" + w.emu.Token(),
		"SLACK_SIGNING_SECRET=" + signingSecret,
		"SLACK_API_URL=" + w.emuSrv.URL + "/api/",
		"SLACK_DEFAULT_CHANNEL=" + channel,
		"SLACK_POST_INTERVAL=10ms",
		"INTAKE_TOKENS=agent:" + agentToken,
		"INTAKE_RATE=60000/m:10000",
		"CALLBACK_SECRET=" + callbackSecret,
		"CALLBACK_ALLOW_PRIVATE=true",
		"DEFAULT_REVIEWERS=" + reviewer,
		"JOB_LEASE=5s", // the least allowed: a dead worker's jobs come back soonest
		"JOB_POLL_INTERVAL=50ms",
		"LOG_LEVEL=info",
		"SHUTDOWN_TIMEOUT=5s",
		"GORACE=halt_on_error=1",
	}
	for _, k := range []string{"PATH", "HOME", "TMPDIR"} {
		if v, ok := os.LookupEnv(k); ok {
			env = append(env, k+"="+v)
		}
	}
	b := &botProc{t: w.t, name: name, url: "http://" + addr, addr: addr, env: append(env, extra...),
		log: filepath.Join(w.dir, name+".log"), bin: approvalbotBinary(w.t)}
	w.t.Cleanup(b.stop)
	w.bots = append(w.bots, b)
	b.start()
	return b
}

// start runs a new incarnation and waits for /readyz.
func (b *botProc) start() {
	b.t.Helper()
	f, err := os.OpenFile(b.log, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		b.t.Fatal(err)
	}
	defer f.Close()
	b.mu.Lock()
	b.runs++
	fmt.Fprintf(f, "=== %s run %d at %s\n", b.name, b.runs, time.Now().Format(time.RFC3339Nano))
	cmd := exec.Command(b.bin)
	cmd.Env, cmd.Stdout, cmd.Stderr = b.env, f, f
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL} // dies with the test
	if err := cmd.Start(); err != nil {
		b.mu.Unlock()
		b.t.Fatalf("start %s: %v", b.name, err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	b.cmd, b.done = cmd, done
	b.mu.Unlock()
	b.waitReady(done)
}

// waitReady polls /readyz until it answers 200 (Redis and Slack checked).
func (b *botProc) waitReady(done <-chan struct{}) {
	b.t.Helper()
	client := &http.Client{Timeout: 5 * time.Second}
	deadline := time.Now().Add(guard)
	for {
		resp, err := client.Get(b.url + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		select {
		case <-done:
			b.t.Fatalf("%s exited before it was ready:\n%s", b.name, tail(b.log, 40))
		default:
		}
		if time.Now().After(deadline) {
			b.t.Fatalf("%s not ready after %v (%v):\n%s", b.name, guard, err, tail(b.log, 40))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// kill SIGKILLs the process (nothing flushed, nothing handed over) and
// waits until it is gone.
func (b *botProc) kill() {
	b.mu.Lock()
	cmd, done := b.cmd, b.done
	b.mu.Unlock()
	if cmd == nil {
		return
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil && !errors.Is(err, os.ErrProcessDone) {
		b.t.Fatalf("kill %s: %v", b.name, err)
	}
	<-done
}

// alive reports whether the current incarnation is running.
func (b *botProc) alive() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	select {
	case <-b.done:
		return false
	default:
		return true
	}
}

// stop ends the process at the end of the test and fails the test if the
// race detector reported anything in any incarnation.
func (b *botProc) stop() {
	b.kill()
	if log, _ := os.ReadFile(b.log); bytes.Contains(log, []byte("WARNING: DATA RACE")) {
		b.t.Errorf("%s: the race detector reported a race:\n%s", b.name, log)
	}
	if b.t.Failed() {
		b.t.Logf("%s's log (last lines):\n%s", b.name, tail(b.log, 30))
	}
	// FAULTS_LOGS=dir keeps every bot's log, passing or not.
	if dir := os.Getenv("FAULTS_LOGS"); dir != "" {
		if log, err := os.ReadFile(b.log); err == nil {
			name := strings.ReplaceAll(b.t.Name(), "/", "_") + "-" + b.name + ".log"
			_ = os.WriteFile(filepath.Join(dir, name), log, 0o644)
		}
	}
}

// auditVerify runs `approvalbot audit verify` against the world's Redis.
func (w *world) auditVerify() {
	w.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), guard)
	defer cancel()
	cmd := exec.CommandContext(ctx, approvalbotBinary(w.t), "audit", "verify")
	cmd.Env = append(os.Environ(), "REDIS_URL=redis://"+w.redis.Addr+"/0", "REDIS_PREFIX=ab")
	out, err := cmd.CombinedOutput()
	if err != nil {
		w.t.Errorf("approvalbot audit verify: %v\n%s", err, out)
	}
}

func tail(path string, n int) string {
	b, _ := os.ReadFile(path)
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/approvalbot/approvalbot/internal/slackemu"
	"github.com/redis/go-redis/v9"
)

// Instructions is redis-server's work per create counted in instructions,
// by valgrind's callgrind: unlike its CPU time, which on a shared VM moves
// more from run to run than any one change to the scripts or the data
// model, it moves by about a percent at most (the sorted sets' skip lists
// take random levels; issue #17). redis-server runs
// under callgrind with its instrumentation off while the warm-up creates
// fill every set past the size at which Redis stops keeping it compact
// (as in the intake loop, whose sets are large), then on for the counted
// creates. The sealer and everything else the service does in Redis
// meanwhile count too; the kernel's work (system calls) does not.
type Instructions struct {
	Warm      int     `json:"warm"`       // creates before counting
	Creates   int     `json:"creates"`    // creates counted
	PerCreate float64 `json:"per_create"` // redis-server's instructions per create
	// Skipped says why nothing was measured (valgrind not installed).
	Skipped string `json:"skipped,omitempty"`
}

// measureInstructions counts redis-server's instructions over n creates
// made after warm others, eight at a time, through the service's intake
// (as memory's are), on a redis-server of its own. keep, when not empty,
// is where callgrind's profile of the counted creates is copied.
func (e *env) measureInstructions(warm, n int, keep string) (Instructions, error) {
	r := Instructions{Warm: warm, Creates: n}
	valgrind, err1 := exec.LookPath("valgrind")
	control, err2 := exec.LookPath("callgrind_control")
	server, err3 := exec.LookPath("redis-server")
	if errors.Join(err1, err2, err3) != nil {
		r.Skipped = "needs valgrind (callgrind_control) and redis-server on PATH"
		return r, nil
	}
	dir, err := os.MkdirTemp("", "bench-callgrind")
	if err != nil {
		return r, err
	}
	defer os.RemoveAll(dir)
	port, err := freePort()
	if err != nil {
		return r, err
	}
	vg := exec.Command(valgrind, "--tool=callgrind", "--instr-atstart=no",
		"--callgrind-out-file="+filepath.Join(dir, "callgrind.out"), "--log-file="+filepath.Join(dir, "valgrind.log"),
		server, "--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--protected-mode", "no")
	if err := vg.Start(); err != nil {
		return r, fmt.Errorf("instructions: start redis-server under valgrind: %w", err)
	}
	defer func() {
		_ = vg.Process.Kill()
		_ = vg.Wait()
	}()
	// Under callgrind redis-server takes seconds to start (the client would
	// log every refused dial meanwhile) and runs some fifty times slower: a
	// round trip carrying eight creates takes tens of milliseconds.
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	if err := waitListening(addr, time.Minute); err != nil {
		return r, fmt.Errorf("instructions: redis-server under valgrind: %w", err)
	}
	rdb := redis.NewClient(&redis.Options{Addr: addr, ReadTimeout: time.Minute, WriteTimeout: time.Minute})
	defer rdb.Close()
	if err := waitPing(rdb, time.Minute); err != nil {
		return r, fmt.Errorf("instructions: redis-server under valgrind: %w", err)
	}
	in, err := e.newBotOn(rdb, fmt.Sprintf("bench%d-instructions", os.Getpid()), slackemu.New(slackemu.Options{MaxCalls: 1000}), time.Second)
	if err != nil {
		return r, err
	}
	defer in.Close()
	body := func(i int) []byte { return e.requestBody(fmt.Sprintf("i%d-%d", e.seq.Add(1), i)) }
	if err := e.createAll(in.http.URL, warm, body); err != nil {
		return r, fmt.Errorf("instructions: warm-up: %w", err)
	}
	pid := strconv.Itoa(vg.Process.Pid)
	if out, err := exec.Command(control, "--instr=on", pid).CombinedOutput(); err != nil {
		return r, fmt.Errorf("instructions: callgrind_control --instr=on: %w: %s", err, out)
	}
	if err := e.createAll(in.http.URL, n, body); err != nil {
		return r, fmt.Errorf("instructions: %w", err)
	}
	if out, err := exec.Command(control, "--dump", pid).CombinedOutput(); err != nil {
		return r, fmt.Errorf("instructions: callgrind_control --dump: %w: %s", err, out)
	}
	total, err := callgrindTotal(dir)
	if err != nil {
		return r, fmt.Errorf("instructions: %w", err)
	}
	r.PerCreate = float64(total) / float64(n)
	if keep != "" {
		b, err := os.ReadFile(filepath.Join(dir, "callgrind.out.1"))
		if err == nil {
			err = os.WriteFile(keep, b, 0o644)
		}
		if err != nil {
			return r, fmt.Errorf("instructions: keep callgrind's profile: %w", err)
		}
	}
	return r, nil
}

// callgrindTotal reads the instruction total of callgrind's first dump in
// dir (callgrind.out.1: the counted creates' alone, as nothing was
// collected before instrumentation was switched on).
func callgrindTotal(dir string) (int64, error) {
	b, err := os.ReadFile(filepath.Join(dir, "callgrind.out.1"))
	if err != nil {
		return 0, fmt.Errorf("read callgrind's dump: %w", err)
	}
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, "totals:"); ok {
			return strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		}
	}
	return 0, errors.New("callgrind's dump has no totals line")
}

// waitListening waits until addr accepts a TCP connection, for up to d.
func waitListening(addr string, d time.Duration) error {
	deadline := time.Now().Add(d)
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			return c.Close()
		}
		if time.Now().After(deadline) {
			return err
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// waitPing waits until rdb answers, for up to d.
func waitPing(rdb *redis.Client, d time.Duration) error {
	deadline := time.Now().Add(d)
	for {
		err := rdb.Ping(context.Background()).Err()
		if err == nil || time.Now().After(deadline) {
			return err
		}
		time.Sleep(100 * time.Millisecond)
	}
}

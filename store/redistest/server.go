package redistest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// Server is a redis-server (or a Sentinel) private to one test, for tests of
// deployments the shared server cannot play: a Cluster node named as a
// single node, a master with its replica and Sentinels.
type Server struct {
	Addr string // 127.0.0.1:port
	Port int
	Dir  string // its working directory, with redis.log
	bin  string
	argv []string
	cmd  *exec.Cmd
	done chan struct{} // closed when the process has exited
}

// StartServer runs redis-server with config (the text of a redis.conf, may
// be empty) and extra command-line arguments on a free loopback port, and
// waits until it answers PING. It is killed when the test ends. Without
// redis-server on PATH the test is skipped, or fails under CI=true.
func StartServer(tb testing.TB, config string, args ...string) *Server {
	tb.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		if os.Getenv("CI") == "true" {
			tb.Fatalf("redistest: CI needs redis-server on PATH: %v", err)
		}
		tb.Skipf("redistest: no redis-server on PATH: %v", err)
	}
	dir := tb.TempDir()
	conf := filepath.Join(dir, "redis.conf")
	// A Sentinel rewrites its config file, so it must be a file of its own.
	if err := os.WriteFile(conf, []byte(config), 0o600); err != nil {
		tb.Fatalf("redistest: write %s: %v", conf, err)
	}
	// A Cluster node also listens on its bus port, port+10000.
	cluster := slices.Contains(args, "--cluster-enabled")
	s := &Server{Dir: dir, bin: bin}
	tb.Cleanup(s.Kill)
	// The free port is found by listening and closing, so another process
	// (on a busy CI machine, any of hundreds of test connections) may take
	// it, or the bus port, before redis-server binds: try other ports then.
	for attempt := 1; ; attempt++ {
		port, err := freePort(cluster)
		if err != nil {
			tb.Fatalf("redistest: %v", err)
		}
		s.Addr, s.Port = fmt.Sprintf("127.0.0.1:%d", port), port
		s.argv = append([]string{conf, "--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "",
			"--appendonly", "no", "--dir", dir, "--logfile", filepath.Join(dir, "redis.log")}, args...)
		log, exited := s.tryStart(tb)
		if !exited {
			return s
		}
		if attempt == 5 || !strings.Contains(log, "Address already in use") {
			tb.Fatalf("redistest: redis-server %v exited:\n%s", s.argv, log)
		}
		_ = os.Remove(filepath.Join(dir, "redis.log"))
	}
}

// start runs the process and waits until it answers PING.
func (s *Server) start(tb testing.TB) {
	tb.Helper()
	if log, exited := s.tryStart(tb); exited {
		tb.Fatalf("redistest: redis-server %v exited:\n%s", s.argv, log)
	}
}

// tryStart runs the process and waits until it answers PING; exited says
// it exited first, with its log.
func (s *Server) tryStart(tb testing.TB) (log string, exited bool) {
	tb.Helper()
	s.done = make(chan struct{})
	s.cmd = exec.Command(s.bin, s.argv...)
	s.cmd.SysProcAttr = dieWithParent()
	if err := s.cmd.Start(); err != nil {
		tb.Fatalf("redistest: start redis-server: %v", err)
	}
	cmd, done := s.cmd, s.done
	go func() { _ = cmd.Wait(); close(done) }()
	rdb := redis.NewClient(&redis.Options{Addr: s.Addr})
	defer rdb.Close()
	// A generous bound: it only stops a test whose server never comes up.
	deadline := time.Now().Add(time.Minute)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		err := rdb.Ping(ctx).Err()
		cancel()
		if err == nil {
			return "", false
		}
		select {
		case <-done:
			log, _ := os.ReadFile(filepath.Join(s.Dir, "redis.log"))
			return string(log), true
		default:
		}
		if time.Now().After(deadline) {
			tb.Fatalf("redistest: redis-server on port %d did not answer: %v", s.Port, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Restart starts the server again after Kill, with the same arguments, port
// and directory, and waits until it answers PING. With "--appendonly yes
// --appendfsync always" it comes back with every write it acknowledged
// before it was killed.
func (s *Server) Restart(tb testing.TB) {
	tb.Helper()
	s.start(tb)
}

// Pid is the server process's id (for SIGSTOP and SIGCONT).
func (s *Server) Pid() int { return s.cmd.Process.Pid }

// Kill stops the server at once (SIGKILL: nothing is flushed or handed
// over, as in a crash) and waits for it to exit.
func (s *Server) Kill() {
	if s.cmd == nil || s.cmd.Process == nil {
		return
	}
	if err := s.cmd.Process.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return
	}
	<-s.done
}

// freePort finds a loopback port nothing listens on; withBus, one whose
// Cluster bus port (port+10000) is free as well.
func freePort(withBus bool) (int, error) {
	for range 100 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return 0, fmt.Errorf("find a free port: %w", err)
		}
		port := l.Addr().(*net.TCPAddr).Port
		if !withBus {
			l.Close()
			return port, nil
		}
		if port+10000 <= 65535 {
			if bus, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port+10000)); err == nil {
				bus.Close()
				l.Close()
				return port, nil
			}
		}
		l.Close()
	}
	return 0, errors.New("find a free port whose cluster bus port is free too: none in 100 tries")
}

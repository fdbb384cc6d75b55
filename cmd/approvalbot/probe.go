package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"time"
)

// The release image is distroless: no shell, no curl, no sleep. These two
// commands are what its health check and a Kubernetes preStop hook run
// instead (deploy/Dockerfile, deploy/compose.yaml, deploy/helm).

// defaultHealthURL is /healthz on the loopback address of LISTEN_ADDR's port
// (the bot's own default, :8080, when unset), so a container that moved the
// port in its environment is still checked where the bot listens.
func defaultHealthURL(listenAddr string) string {
	if listenAddr == "" {
		listenAddr = ":8080"
	}
	host, port, err := net.SplitHostPort(listenAddr)
	if err != nil || port == "" {
		return "http://127.0.0.1:8080/healthz"
	}
	if host == "" || host == "0.0.0.0" || host == "::" {
		host = "127.0.0.1"
	}
	return "http://" + net.JoinHostPort(host, port) + "/healthz"
}

// parseHealthcheck reads "healthcheck [--url URL] [--timeout D]".
func parseHealthcheck(args []string) (invocation, error) {
	fs := flag.NewFlagSet("approvalbot healthcheck", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	inv := invocation{cmd: cmdHealthcheck}
	fs.StringVar(&inv.url, "url", defaultHealthURL(os.Getenv("LISTEN_ADDR")), "")
	fs.DurationVar(&inv.timeout, "timeout", 2*time.Second, "")
	if err := fs.Parse(args); err != nil {
		return invocation{}, usageError{fmt.Sprintf("%s: %v", strings.TrimPrefix(fs.Name(), "approvalbot "), err)}
	}
	if fs.NArg() > 0 {
		return invocation{}, usageError{fmt.Sprintf("unknown command %q", "healthcheck "+strings.Join(fs.Args(), " "))}
	}
	if !strings.HasPrefix(inv.url, "http://") && !strings.HasPrefix(inv.url, "https://") {
		return invocation{}, usageError{fmt.Sprintf("%s: --url %q is not an http:// or https:// URL", fs.Name(), inv.url)}
	}
	if inv.timeout <= 0 {
		return invocation{}, usageError{fs.Name() + ": --timeout must be positive"}
	}
	return inv, nil
}

// healthcheck GETs url and fails unless it answers 2xx within timeout.
func healthcheck(ctx context.Context, url string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return fmt.Errorf("healthcheck: %w", err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("healthcheck: %w", err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return fmt.Errorf("healthcheck: GET %s: %s %s", url, resp.Status, strings.TrimSpace(string(body)))
	}
	return nil
}

// parseSleep reads "sleep DURATION".
func parseSleep(args []string) (invocation, error) {
	if len(args) != 1 {
		return invocation{}, usageError{"approvalbot sleep takes one duration, e.g. approvalbot sleep 5s"}
	}
	d, err := time.ParseDuration(args[0])
	if err != nil || d < 0 {
		return invocation{}, usageError{fmt.Sprintf("approvalbot sleep: %q is not a duration like 5s or 1m", args[0])}
	}
	return invocation{cmd: cmdSleep, sleep: d}, nil
}

// sleep waits d, or until ctx ends (SIGTERM, SIGINT).
func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

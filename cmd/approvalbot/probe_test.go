package main

import (
	"bytes"
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// approvalbot healthcheck exits 0 when the URL answers 2xx and 1 otherwise
// (an error status, nothing listening, no answer within --timeout), saying
// why on stderr: what a container health check needs from a shell-less image.
func TestHealthcheckExitsZeroOnlyWhenHealthy(t *testing.T) {
	t.Parallel()
	hang := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/healthz":
			_, _ = w.Write([]byte(`{"status":"ok"}`))
		case "/hang":
			select {
			case <-hang:
			case <-r.Context().Done():
			}
		default:
			http.Error(w, `{"status":"unavailable"}`, http.StatusServiceUnavailable)
		}
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(hang) })
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	refused := "http://" + closed.Addr().String() + "/healthz"
	_ = closed.Close()

	for _, c := range []struct {
		args    []string
		code    int
		problem string
	}{
		{[]string{"healthcheck", "--url", srv.URL + "/healthz"}, 0, ""},
		{[]string{"healthcheck", "-url=" + srv.URL + "/healthz", "-timeout", "5s"}, 0, ""},
		{[]string{"healthcheck", "--url", srv.URL + "/readyz"}, 1, "503 Service Unavailable"},
		{[]string{"healthcheck", "--url", refused}, 1, "connect"},
		{[]string{"healthcheck", "--url", srv.URL + "/hang", "--timeout", "50ms"}, 1, "deadline exceeded"},
	} {
		var out, errOut bytes.Buffer
		code := runCLI(t.Context(), c.args, &out, &errOut)
		if code != c.code || out.Len() != 0 || !strings.Contains(errOut.String(), c.problem) {
			t.Errorf("%v: exit %d (want %d), stdout %q, stderr %q (want it to say %q)", c.args, code, c.code, out.String(), errOut.String(), c.problem)
		}
	}
}

// Without --url the check goes to /healthz on the loopback address of
// LISTEN_ADDR's port, where the bot in the same container listens.
func TestHealthcheckDefaultURLFollowsListenAddr(t *testing.T) {
	t.Parallel()
	for addr, want := range map[string]string{
		"":               "http://127.0.0.1:8080/healthz",
		":8080":          "http://127.0.0.1:8080/healthz",
		":9090":          "http://127.0.0.1:9090/healthz",
		"0.0.0.0:7000":   "http://127.0.0.1:7000/healthz",
		"[::]:7001":      "http://127.0.0.1:7001/healthz",
		"10.1.2.3:8081":  "http://10.1.2.3:8081/healthz",
		"[::1]:8082":     "http://[::1]:8082/healthz",
		"not an address": "http://127.0.0.1:8080/healthz",
	} {
		if got := defaultHealthURL(addr); got != want {
			t.Errorf("defaultHealthURL(%q) = %q, want %q", addr, got, want)
		}
	}
}

// approvalbot sleep waits its duration and exits 0 (a preStop hook), and
// ends early when the process is told to stop.
func TestSleepWaitsAndStopsEarlyOnSignal(t *testing.T) {
	t.Parallel()
	var out, errOut bytes.Buffer
	if code := runCLI(t.Context(), []string{"sleep", "0s"}, &out, &errOut); code != 0 || out.Len()+errOut.Len() != 0 {
		t.Errorf("sleep 0s: exit %d, stdout %q, stderr %q", code, out.String(), errOut.String())
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	start := time.Now()
	if code := runCLI(ctx, []string{"sleep", "1h"}, &out, &errOut); code != 0 {
		t.Errorf("sleep 1h, stopped: exit %d, stderr %q", code, errOut.String())
	}
	if took := time.Since(start); took > time.Minute {
		t.Errorf("sleep 1h with its context ended took %s", took)
	}
}

func TestProbeCommandsRefuseBadArguments(t *testing.T) {
	t.Parallel()
	for args, want := range map[string]string{
		"sleep":                        "takes one duration",
		"sleep 5s 5s":                  "takes one duration",
		"sleep soon":                   `"soon" is not a duration`,
		"sleep -1s":                    `"-1s" is not a duration`,
		"healthcheck now":              `unknown command "healthcheck now"`,
		"healthcheck --url":            "flag needs an argument",
		"healthcheck --url localhost":  "is not an http:// or https:// URL",
		"healthcheck --timeout 0s":     "--timeout must be positive",
		"healthcheck --timeout second": "invalid value",
	} {
		var out, errOut bytes.Buffer
		code := runCLI(t.Context(), strings.Fields(args), &out, &errOut)
		if code != 2 || out.Len() != 0 || !strings.Contains(errOut.String(), want) {
			t.Errorf("%q: exit %d, stdout %q, stderr %q (want it to say %q)", args, code, out.String(), errOut.String(), want)
		}
	}
}

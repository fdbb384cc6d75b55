package main

import (
	"io"
	"strings"
	"testing"
)

func TestMCPCommandRefusesABadURL(t *testing.T) {
	t.Parallel()
	env := map[string]string{"APPROVALBOT_URL": "localhost:8080"}
	err := runMCP(t.Context(), func(k string) string { return env[k] }, io.NopCloser(strings.NewReader("")), nopWriteCloser{io.Discard})
	if err == nil || !strings.Contains(err.Error(), "APPROVALBOT_URL") {
		t.Errorf("runMCP with %q: %v", env["APPROVALBOT_URL"], err)
	}
	if inv, err := parseArgs([]string{"mcp"}); err != nil || inv.cmd != cmdMCP {
		t.Errorf("parseArgs(mcp): %+v %v", inv, err)
	}
	if _, err := parseArgs([]string{"mcp", "serve"}); err == nil {
		t.Error("parseArgs(mcp serve) accepted")
	}
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }

//go:build !nolocal

package main

import (
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/approvalbot/approvalbot/mcpserver"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// approvalbot mcp, as an MCP client runs it (stdin and stdout), against a
// local-mode bot (no token), and the same bot's /mcp over HTTP without a
// token (local mode's anonymous intake): submit without waiting, read,
// withdraw, with the SDK's client. (Not parallel: startLocalBot sets
// environment variables.)
func TestMCPCommandServesTheToolsOverStdio(t *testing.T) {
	base := startLocalBot(t)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()

	inR, inW := io.Pipe()   // client → approvalbot mcp's stdin
	outR, outW := io.Pipe() // approvalbot mcp's stdout → client
	env := map[string]string{"APPROVALBOT_URL": base}
	done := make(chan error, 1)
	go func() { done <- runMCP(ctx, func(k string) string { return env[k] }, inR, outW) }()

	stdio := connectMCP(t, ctx, &mcp.IOTransport{Reader: outR, Writer: inW})
	streamable := connectMCP(t, ctx, &mcp.StreamableClientTransport{Endpoint: base + "/mcp"})
	for name, cs := range map[string]*mcp.ClientSession{"stdio": stdio, "http": streamable} {
		id := "mcp-cli-" + name
		out := callMCP(t, ctx, cs, "request_decision", map[string]any{"id": id, "title": "Deploy?", "wait": false,
			"decisions": []map[string]any{{"id": "go", "type": "approval", "prompt": "Deploy v2?", "required": true}}})
		if out.ID != id || !out.Open {
			t.Fatalf("%s: request_decision: %+v", name, out)
		}
		if out = callMCP(t, ctx, cs, "get_decision", map[string]any{"id": id}); out.Status != "pending" {
			t.Errorf("%s: get_decision: %+v", name, out)
		}
		if out = callMCP(t, ctx, cs, "withdraw_decision", map[string]any{"id": id}); out.Status != "withdrawn" {
			t.Errorf("%s: withdraw_decision: %+v", name, out)
		}
	}
	_ = stdio.Close() // closes approvalbot mcp's stdin: it exits cleanly
	if err := <-done; err != nil {
		t.Errorf("approvalbot mcp: %v", err)
	}
}

func connectMCP(t *testing.T, ctx context.Context, tr mcp.Transport) *mcp.ClientSession {
	t.Helper()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "cli-test", Version: "1"}, nil).Connect(ctx, tr, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

func callMCP(t *testing.T, ctx context.Context, cs *mcp.ClientSession, tool string, args map[string]any) mcpserver.DecisionOutput {
	t.Helper()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", tool, err)
	}
	if res.IsError {
		var b strings.Builder
		for _, c := range res.Content {
			if tc, ok := c.(*mcp.TextContent); ok {
				b.WriteString(tc.Text)
			}
		}
		t.Fatalf("%s: %s", tool, b.String())
	}
	var out mcpserver.DecisionOutput
	b, _ := json.Marshal(res.StructuredContent)
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

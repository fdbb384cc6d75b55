package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"

	"github.com/approvalbot/approvalbot/bot"
	"github.com/approvalbot/approvalbot/client"
	"github.com/approvalbot/approvalbot/mcpserver"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// defaultMCPURL is the bot approvalbot mcp talks to without APPROVALBOT_URL:
// a local-mode bot on this machine.
const defaultMCPURL = "http://localhost:8080"

// runMCP serves the MCP tools over stdio (approvalbot mcp): an MCP client
// starts it as a subprocess, and its tools call the bot at APPROVALBOT_URL
// with APPROVALBOT_TOKEN (an INTAKE_TOKENS token; none for local mode). It
// returns when the client closes stdin or ctx ends.
func runMCP(ctx context.Context, getenv func(string) string, stdin io.ReadCloser, stdout io.WriteCloser) error {
	base := cmp.Or(getenv("APPROVALBOT_URL"), defaultMCPURL)
	if u, err := url.Parse(base); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("APPROVALBOT_URL %q must be http(s)://host[:port]", base)
	}
	version := bot.ReadBuildInfo().Version
	c := client.New(base, getenv("APPROVALBOT_TOKEN"), client.WithUserAgent("approvalbot-mcp/"+version))
	s := mcpserver.ForClient(c, &mcpserver.Options{Version: version})
	err := s.Run(ctx, &mcp.IOTransport{Reader: stdin, Writer: stdout})
	if ctx.Err() != nil || errors.Is(err, io.EOF) || errors.Is(err, mcp.ErrConnectionClosed) {
		return nil // the client went away, or we were told to stop
	}
	return err
}

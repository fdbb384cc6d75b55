package mcpserver

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"sync"

	"github.com/approvalbot/approvalbot/client"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// loopbackBase is the base URL of the bot's own /v1 as the HTTP transport's
// tools reach it; the loopback transport ignores the host.
const loopbackBase = "http://approvalbot.loopback"

// HTTPOptions configure Handler.
type HTTPOptions struct {
	// Bot is the bot's HTTP handler: the tools call its /v1 in memory,
	// with the caller's Authorization header.
	Bot http.Handler
	// Authenticate wraps the MCP endpoint in the bot's agent
	// authentication (webhook.API.Authenticated): a caller without a valid
	// intake token is answered 401 as /v1 answers it.
	Authenticate func(next func(w http.ResponseWriter, r *http.Request, agent string)) http.Handler
	// LocalhostProtection rejects requests that reach a loopback address
	// with a Host that is not (DNS rebinding); for a bot that accepts
	// unauthenticated calls (local mode), which a web page could otherwise
	// drive through a browser. Behind a proxy, Host is the public name, so
	// it is off when a token is required.
	LocalhostProtection bool
	Version             string
	Logger              *slog.Logger
}

// HTTPHandler serves the tools over streamable HTTP.
type HTTPHandler struct {
	h    http.Handler
	done chan struct{}
	once sync.Once
}

// Handler returns the streamable HTTP endpoint (mounted at /mcp). It is
// stateless (no Mcp-Session-Id): each call stands alone, so any replica
// behind a load balancer serves it, and cancelling a call (closing its
// HTTP request) ends its wait.
func Handler(o HTTPOptions) *HTTPHandler {
	hh := &HTTPHandler{done: make(chan struct{})}
	clientFor := func(ctx context.Context, req *mcp.CallToolRequest) (*client.Client, error) {
		token, lb := "", loopback{h: o.Bot}
		if req.Extra != nil && req.Extra.Header != nil {
			scheme, t, ok := strings.Cut(req.Extra.Header.Get("Authorization"), " ")
			if ok && strings.EqualFold(scheme, "Bearer") {
				token = strings.TrimSpace(t)
			}
			lb.requestID = req.Extra.Header.Get(requestIDHeader)
		}
		return client.New(loopbackBase, token, client.WithHTTPClient(&http.Client{Transport: lb}),
			client.WithUserAgent("approvalbot-mcp")), nil
	}
	server := New(clientFor, &Options{Version: o.Version, Done: hh.done})
	sh := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, &mcp.StreamableHTTPOptions{
		Stateless: true, PropagateRequestCancellation: true, Logger: o.Logger,
		DisableLocalhostProtection: !o.LocalhostProtection,
	})
	if o.Authenticate == nil {
		panic(errors.New("mcpserver: HTTPOptions.Authenticate is required"))
	}
	hh.h = o.Authenticate(func(w http.ResponseWriter, r *http.Request, _ string) {
		// The bot's access log gave this request an id (X-Request-Id on
		// the answer); its tools' /v1 calls are logged with the same.
		if id := w.Header().Get(requestIDHeader); id != "" {
			r = r.Clone(r.Context())
			r.Header.Set(requestIDHeader, id)
		}
		sh.ServeHTTP(w, r)
	})
	return hh
}

func (h *HTTPHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) { h.h.ServeHTTP(w, r) }

// Close ends the tools' waits: each returns the request as it stands, so
// the HTTP server can shut down without waiting for reviewers.
func (h *HTTPHandler) Close() { h.once.Do(func() { close(h.done) }) }

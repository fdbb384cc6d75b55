package slackemu

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/gorilla/websocket"
)

// Socket Mode: apps.connections.open, called with the app-level token,
// answers a ws:// URL. The WebSocket behind it is served on a loopback
// listener the server owns (the in-process transport of Client carries no
// WebSockets), started by the first apps.connections.open and stopped by
// Close. A connection gets Slack's "hello", then whatever envelopes a test
// sends with SendEnvelope or Deliver; the client's acknowledgements are
// recorded with their envelopes (SocketEnvelopes) and can be awaited
// (WaitAck). The wire format is Slack's, as slack-go's socketmode reads it.

// DefaultAppToken is the app-level token (xapp-…) apps.connections.open
// accepts.
const DefaultAppToken = "xapp-1-A0LOCAL-1-emulator"

// appsConnectionsOpen is the one method authenticated by the app-level
// token instead of the bot token.
const appsConnectionsOpen = "apps.connections.open"

// socketPingInterval is how often a connection is pinged; slack-go's client
// reconnects when it hears no ping for 30 s.
const socketPingInterval = 10 * time.Second

// AppToken returns the app-level token apps.connections.open accepts.
func (s *Server) AppToken() string { return DefaultAppToken }

// Envelope is one Socket Mode request the server sends a connected client.
type Envelope struct {
	// ID is the envelope_id; SendEnvelope generates one when empty. Reuse
	// one to play Slack delivering an unacknowledged envelope again.
	ID string `json:"envelope_id"`
	// Type is "slash_commands", "interactive" or "events_api".
	Type string `json:"type"`
	// Payload is what an HTTP endpoint would have received, as JSON: the
	// slash command's fields, the interaction payload, the Events API body.
	Payload json.RawMessage `json:"payload"`
	// AcceptsResponsePayload says the ack may carry a payload; Slack sets
	// it for slash commands and interactions. SendEnvelope sets it for them.
	AcceptsResponsePayload bool   `json:"accepts_response_payload"`
	RetryAttempt           int    `json:"retry_attempt"`
	RetryReason            string `json:"retry_reason"`
}

// SocketEnvelope is a sent envelope and its acknowledgement, if any.
type SocketEnvelope struct {
	Envelope
	SentAt  time.Time
	Acked   bool
	AckedAt time.Time
	// Ack is the ack's payload; nil when the ack carried none.
	Ack json.RawMessage
}

// Latency is the time from sending the envelope to its ack (0 until acked).
func (e SocketEnvelope) Latency() time.Duration {
	if !e.Acked {
		return 0
	}
	return e.AckedAt.Sub(e.SentAt)
}

// socketMode is the server's Socket Mode endpoint. It has its own lock:
// apps.connections.open takes it with Server.mu held, so nothing here may
// take Server.mu.
type socketMode struct {
	mu       sync.Mutex
	srv      *http.Server
	addr     string
	closed   bool
	tickets  map[string]bool // issued by apps.connections.open, each used once
	conns    []*socketConn   // open connections, oldest first
	connects int
	seq      uint64
	sent     []SocketEnvelope
	changed  chan struct{} // closed and replaced on every change
}

type socketConn struct {
	ws  *websocket.Conn
	wmu sync.Mutex // gorilla/websocket allows one writer at a time
}

func (c *socketConn) write(v any) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	_ = c.ws.SetWriteDeadline(time.Now().Add(5 * time.Second))
	return c.ws.WriteJSON(v)
}

// notify wakes every waiter; it runs with m.mu held.
func (m *socketMode) notify() {
	if m.changed != nil {
		close(m.changed)
	}
	m.changed = make(chan struct{})
}

// appsConnectionsOpen answers apps.connections.open. It runs with s.mu held
// (see dispatch, which leaves the token to it).
func (s *Server) appsConnectionsOpen(req *apiRequest) result {
	switch req.token {
	case "":
		return errResult("not_authed")
	case DefaultAppToken:
	case s.token:
		return errResult("not_allowed_token_type") // a bot token, as Slack answers
	default:
		return errResult("invalid_auth")
	}
	url, err := s.socket.open(s.dir.ws.AppID)
	if err != nil {
		return errResult("internal_error")
	}
	return okResult(map[string]any{"url": url})
}

// open starts the WebSocket listener if needed and issues a one-use URL.
func (m *socketMode) open(appID string) (string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return "", errors.New("slackemu: server closed")
	}
	if m.srv == nil {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return "", fmt.Errorf("slackemu: listen for socket mode: %w", err)
		}
		mux := http.NewServeMux()
		mux.HandleFunc("GET /link/", m.serveLink)
		m.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
		m.addr = ln.Addr().String()
		m.tickets = map[string]bool{}
		go func() { _ = m.srv.Serve(ln) }()
	}
	m.seq++
	ticket := "emu-" + strconv.FormatUint(m.seq, 10)
	m.tickets[ticket] = true
	return "ws://" + m.addr + "/link/?ticket=" + ticket + "&app_id=" + appID, nil
}

// serveLink upgrades a connection with an issued ticket, says hello, pings
// it, and records the acks it sends until it closes.
func (m *socketMode) serveLink(w http.ResponseWriter, r *http.Request) {
	ticket := r.URL.Query().Get("ticket")
	m.mu.Lock()
	ok := m.tickets[ticket] && !m.closed
	delete(m.tickets, ticket)
	m.mu.Unlock()
	if !ok {
		http.Error(w, "unknown or used ticket", http.StatusUnauthorized)
		return
	}
	// Any origin: slack-go sends "https://api.slack.com".
	up := websocket.Upgrader{CheckOrigin: func(*http.Request) bool { return true }}
	ws, err := up.Upgrade(w, r, nil)
	if err != nil {
		return // the upgrader answered
	}
	c := &socketConn{ws: ws}
	defer m.drop(c)
	m.mu.Lock()
	n := len(m.conns) + 1
	m.mu.Unlock()
	hello := map[string]any{"type": "hello", "num_connections": n,
		"debug_info":      map[string]any{"host": "slackemu", "build_number": 1, "approximate_connection_time": 18060},
		"connection_info": map[string]any{"app_id": r.URL.Query().Get("app_id")}}
	if c.write(hello) != nil {
		return
	}
	// The connection takes envelopes only once hello is on the wire, so an
	// envelope cannot overtake it.
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return
	}
	m.conns = append(m.conns, c)
	m.connects++
	m.notify()
	m.mu.Unlock()

	done := make(chan struct{})
	defer close(done)
	go pingLoop(ws, done)
	for {
		var ack struct {
			EnvelopeID string          `json:"envelope_id"`
			Payload    json.RawMessage `json:"payload"`
		}
		if err := ws.ReadJSON(&ack); err != nil {
			var syntax *json.SyntaxError
			if errors.As(err, &syntax) {
				continue
			}
			return
		}
		m.recordAck(ack.EnvelopeID, ack.Payload)
	}
}

// pingLoop pings ws at once and then periodically, as Slack does.
func pingLoop(ws *websocket.Conn, done <-chan struct{}) {
	t := time.NewTicker(socketPingInterval)
	defer t.Stop()
	for {
		if ws.WriteControl(websocket.PingMessage, []byte("emu"), time.Now().Add(5*time.Second)) != nil {
			return
		}
		select {
		case <-done:
			return
		case <-t.C:
		}
	}
}

// drop forgets a closed connection.
func (m *socketMode) drop(c *socketConn) {
	_ = c.ws.Close()
	m.mu.Lock()
	defer m.mu.Unlock()
	for i, o := range m.conns {
		if o == c {
			m.conns = append(m.conns[:i], m.conns[i+1:]...)
			break
		}
	}
	m.notify()
}

// recordAck attaches an ack to the oldest unacknowledged envelope with its id.
func (m *socketMode) recordAck(id string, payload json.RawMessage) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for i := range m.sent {
		if e := &m.sent[i]; e.ID == id && !e.Acked {
			e.Acked, e.AckedAt = true, time.Now()
			if len(payload) > 0 && string(payload) != "null" {
				e.Ack = append(json.RawMessage(nil), payload...)
			}
			break
		}
	}
	m.notify()
}

// wait blocks until cond (run with m.mu held) reports true, or ctx ends.
func (m *socketMode) wait(ctx context.Context, cond func() bool) error {
	for {
		m.mu.Lock()
		if cond() {
			m.mu.Unlock()
			return nil
		}
		if m.changed == nil {
			m.changed = make(chan struct{})
		}
		changed := m.changed
		m.mu.Unlock()
		select {
		case <-changed:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// WaitSocketConnected waits until a Socket Mode client is connected (its
// hello sent).
func (s *Server) WaitSocketConnected(ctx context.Context) error {
	return s.socket.wait(ctx, func() bool { return len(s.socket.conns) > 0 })
}

// SocketConnects reports how many Socket Mode connections were accepted so
// far, and how many are open.
func (s *Server) SocketConnects() (total, open int) {
	s.socket.mu.Lock()
	defer s.socket.mu.Unlock()
	return s.socket.connects, len(s.socket.conns)
}

// SendEnvelope sends e to the newest connected client, waiting for one
// while ctx allows, and returns its envelope id.
func (s *Server) SendEnvelope(ctx context.Context, e Envelope) (string, error) {
	m := &s.socket
	m.mu.Lock()
	for len(m.conns) == 0 {
		m.mu.Unlock()
		if err := s.WaitSocketConnected(ctx); err != nil {
			return "", fmt.Errorf("slackemu: no socket mode client connected: %w", err)
		}
		m.mu.Lock()
	}
	if e.ID == "" {
		m.seq++
		e.ID = fmt.Sprintf("%08x-emu0-4000-8000-%012d", s.now().Unix(), m.seq)
	}
	if e.Type != "events_api" {
		e.AcceptsResponsePayload = true
	}
	c := m.conns[len(m.conns)-1]
	m.sent = append(m.sent, SocketEnvelope{Envelope: e, SentAt: time.Now()})
	m.notify()
	m.mu.Unlock()
	if err := c.write(e); err != nil {
		return "", fmt.Errorf("slackemu: send envelope %s: %w", e.ID, err)
	}
	return e.ID, nil
}

// WaitAck waits for the ack of the last envelope sent with id.
func (s *Server) WaitAck(ctx context.Context, id string) (SocketEnvelope, error) {
	var got SocketEnvelope
	m := &s.socket
	err := m.wait(ctx, func() bool {
		for i := len(m.sent) - 1; i >= 0; i-- {
			if m.sent[i].ID == id {
				got = m.sent[i]
				return got.Acked
			}
		}
		return false
	})
	if err != nil {
		return got, fmt.Errorf("slackemu: no ack for envelope %s: %w", id, err)
	}
	return got, nil
}

// Deliver sends an envelope whose payload is marshalled from payload and
// waits for its ack.
func (s *Server) Deliver(ctx context.Context, typ string, payload any) (SocketEnvelope, error) {
	raw, err := json.Marshal(payload)
	if err != nil {
		return SocketEnvelope{}, fmt.Errorf("slackemu: encode %s payload: %w", typ, err)
	}
	id, err := s.SendEnvelope(ctx, Envelope{Type: typ, Payload: raw})
	if err != nil {
		return SocketEnvelope{}, err
	}
	return s.WaitAck(ctx, id)
}

// SocketEnvelopes returns every envelope sent so far with its ack.
func (s *Server) SocketEnvelopes() []SocketEnvelope {
	s.socket.mu.Lock()
	defer s.socket.mu.Unlock()
	return append([]SocketEnvelope(nil), s.socket.sent...)
}

// DisconnectSockets asks every connected client to reconnect, as Slack
// does before it recycles a connection ("refresh_requested"), and closes
// the connections.
func (s *Server) DisconnectSockets(reason string) {
	m := &s.socket
	m.mu.Lock()
	conns := append([]*socketConn(nil), m.conns...)
	m.mu.Unlock()
	for _, c := range conns {
		_ = c.write(map[string]any{"type": "disconnect", "reason": reason,
			"debug_info": map[string]any{"host": "slackemu"}})
		_ = c.ws.Close()
	}
}

// Close stops the Socket Mode listener and closes its connections. Later
// apps.connections.open calls fail. The Web API keeps working.
func (s *Server) Close() error {
	m := &s.socket
	m.mu.Lock()
	m.closed = true
	srv, conns := m.srv, append([]*socketConn(nil), m.conns...)
	m.notify()
	m.mu.Unlock()
	for _, c := range conns {
		_ = c.ws.Close()
	}
	if srv == nil {
		return nil
	}
	// Hijacked WebSocket connections are not the server's to track.
	if err := srv.Close(); err != nil {
		return fmt.Errorf("slackemu: close socket mode listener: %w", err)
	}
	return nil
}

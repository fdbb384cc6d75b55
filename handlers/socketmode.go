package handlers

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/approvalbot/approvalbot/blocks"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/slack-go/slack"
	"github.com/slack-go/slack/socketmode"
)

// Socket Mode: instead of POSTing to approvalbot's endpoints, Slack sends
// the same requests as envelopes over a WebSocket the bot opens with an
// app-level token (xapp-…). Slack does not sign them: the connection is
// authenticated by the token. Each envelope runs through the same core as
// its HTTP endpoint and is acked with the same payload.

// maxSocketAck is the largest ack Slack accepts over Socket Mode (it drops
// larger ones silently), less room for the envelope id.
const maxSocketAck = 20*1024 - 128

// maxSocketInflight bounds the envelopes handled at once; more wait in
// slack-go's buffer.
const maxSocketInflight = 64

// socketAckWait bounds how long an ack may wait for room in slack-go's send
// queue. It is not cut short by shutdown: an envelope whose effect is
// recorded should still be acked, or the person who clicked sees an error
// and a submitted modal stays open. Slack has given up on the ack after 3 s.
const socketAckWait = 3 * time.Second

// socketAckFlush is how long the connection stays open, on shutdown, after
// the last ack was queued. slack-go writes acks from a queue on its own
// goroutine and has no flush: cancelling its connection drops what is still
// queued. Writing an ack takes far less.
const socketAckFlush = 250 * time.Millisecond

// SocketOptions configure a SocketMode runner.
type SocketOptions struct {
	Logger   *slog.Logger
	Registry prometheus.Registerer // nil: metrics not registered
	// RetryBackoff is the first wait after the client gave up connecting
	// (a refused token, Slack unreachable), doubling to 5 minutes; default 1s.
	RetryBackoff time.Duration
}

// SocketMode receives Slack's slash commands, interactions and Events API
// events over Socket Mode and hands them to the Slack handlers.
type SocketMode struct {
	s         *Slack
	api       *slack.Client
	log       *slog.Logger
	backoff   time.Duration
	connected atomic.Bool
	lastAck   atomic.Int64 // when an ack was last queued, Unix nanoseconds
	gauge     prometheus.Gauge
	connects  prometheus.Counter
}

// NewSocketMode returns a runner for handlers s; api must carry the
// app-level token (slack.OptionAppLevelToken) as well as the bot token.
func NewSocketMode(s *Slack, api *slack.Client, opts SocketOptions) (*SocketMode, error) {
	if s == nil || api == nil {
		return nil, errors.New("handlers: socket mode needs the Slack handlers and a Slack client")
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if opts.RetryBackoff <= 0 {
		opts.RetryBackoff = time.Second
	}
	m := &SocketMode{s: s, api: api, log: log, backoff: opts.RetryBackoff,
		gauge: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "approvalbot_slack_socket_connected",
			Help: "1 while the Socket Mode connection to Slack is open, else 0.",
		}),
		connects: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "approvalbot_slack_socket_connects_total",
			Help: "Socket Mode connections opened; a steady rise means the connection keeps dropping.",
		}),
	}
	if opts.Registry != nil {
		opts.Registry.MustRegister(m.gauge, m.connects)
	}
	return m, nil
}

// Connected reports whether the Socket Mode connection is open now.
func (m *SocketMode) Connected() bool { return m.connected.Load() }

// Run connects and handles envelopes until ctx ends. Then it stops taking
// envelopes, lets those in progress finish and ack, and only then closes
// the connection. slack-go reconnects when Slack asks or the connection
// dies; when it gives up (a refused token), Run starts it again after a
// growing pause.
func (m *SocketMode) Run(ctx context.Context) error {
	client := socketmode.New(m.api, socketmode.OptionLog(slog.NewLogLogger(m.log.Handler(), slog.LevelDebug)))
	// The connection has its own context: closing it with ctx would drop
	// the acks of the envelopes still being handled.
	connCtx, closeConn := context.WithCancel(context.WithoutCancel(ctx))
	defer closeConn()
	var conn, inflight sync.WaitGroup
	conn.Go(func() { m.keepConnected(connCtx, client) })
	sem := make(chan struct{}, maxSocketInflight)
	defer func() {
		m.log.InfoContext(ctx, "socket mode stopping: finishing the envelopes in progress", "in_progress", len(sem))
		inflight.Wait()
		m.flushAcks(ctx)
		closeConn()
		conn.Wait()
		m.setConnected(ctx, false, "stopped")
	}()
	for {
		select {
		case <-ctx.Done():
			return nil
		case ev := <-client.Events:
			if ev.Request == nil || ev.Request.EnvelopeID == "" {
				m.lifecycle(ctx, ev)
				continue
			}
			select {
			case sem <- struct{}{}:
			case <-ctx.Done():
				return nil // not acked: Slack delivers it again
			}
			inflight.Go(func() {
				defer func() { <-sem }()
				m.handle(ctx, client, ev)
			})
		}
	}
}

// flushAcks waits until the acks queued lately had time to be written.
func (m *SocketMode) flushAcks(ctx context.Context) {
	wait := time.Until(time.Unix(0, m.lastAck.Load()).Add(socketAckFlush))
	if wait <= 0 {
		return
	}
	time.Sleep(wait)
	m.log.DebugContext(ctx, "socket mode acks flushed", "waited", wait)
}

// keepConnected runs the client until ctx ends, restarting it when it
// gives up.
func (m *SocketMode) keepConnected(ctx context.Context, client *socketmode.Client) {
	wait := m.backoff
	for {
		err := client.RunContext(ctx)
		if ctx.Err() != nil {
			return
		}
		m.setConnected(ctx, false, "client stopped")
		m.log.ErrorContext(ctx, "socket mode could not connect; trying again", "err", err, "in", wait)
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
		wait = min(wait*2, 5*time.Minute)
	}
}

// lifecycle logs the connection's state changes and tracks whether it is open.
func (m *SocketMode) lifecycle(ctx context.Context, ev socketmode.Event) {
	switch ev.Type {
	case socketmode.EventTypeConnecting:
		m.setConnected(ctx, false, "connecting")
	case socketmode.EventTypeConnected:
		m.connects.Inc()
		m.setConnected(ctx, true, "connected")
	case socketmode.EventTypeHello:
		m.log.DebugContext(ctx, "socket mode hello")
	case socketmode.EventTypeDisconnect:
		m.setConnected(ctx, false, "Slack asked to reconnect")
	case socketmode.EventTypeConnectionError:
		m.setConnected(ctx, false, "connection failed")
		if e, ok := ev.Data.(*slack.ConnectionErrorEvent); ok {
			m.log.WarnContext(ctx, "socket mode connection failed; retrying", "attempt", e.Attempt, "in", e.Backoff, "err", e.ErrorObj)
		}
	case socketmode.EventTypeInvalidAuth:
		m.setConnected(ctx, false, "token refused")
		m.log.ErrorContext(ctx, "Slack refused the app-level token (SLACK_APP_TOKEN); it needs the connections:write scope")
	case socketmode.EventTypeErrorWriteFailed, socketmode.EventTypeIncomingError, socketmode.EventTypeErrorBadMessage:
		m.log.WarnContext(ctx, "socket mode message problem", "type", ev.Type, "data", ev.Data)
	}
}

func (m *SocketMode) setConnected(ctx context.Context, up bool, why string) {
	if m.connected.Swap(up) == up {
		return
	}
	if up {
		m.gauge.Set(1)
		m.log.InfoContext(ctx, "socket mode connected to Slack")
	} else {
		m.gauge.Set(0)
		m.log.WarnContext(ctx, "socket mode disconnected from Slack", "reason", why)
	}
}

// handle runs one envelope through its core and acks it with the payload
// the HTTP endpoint would have answered, or empty for a redelivery of one
// already applied. An envelope that could not be de-duplicated is not
// acked, so Slack delivers it again.
func (m *SocketMode) handle(ctx context.Context, client *socketmode.Client, ev socketmode.Event) {
	start := time.Now()
	env := ev.Request
	// The effect is recorded even when shutdown begins meanwhile; an ack
	// that cannot be sent any more makes Slack deliver it again, and a
	// redelivery is not applied twice: events by their event id (Event),
	// interactions and commands by their envelope id here, since applying
	// a click again could undo a later one (approve, reject, approve again).
	work, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if ev.Type == socketmode.EventTypeInteractive || ev.Type == socketmode.EventTypeSlashCommand {
		// One store budget from arrival for the redelivery check and the
		// answer, as over HTTP: the ack makes Slack's 3 seconds.
		var cancelBudget context.CancelFunc
		work, cancelBudget = m.s.storeDeadline(work)
		defer cancelBudget()
	}
	var payload any
	var kind, responseURL string
	redelivered, err := m.redelivered(work, ev)
	switch {
	case err != nil && ev.Type == socketmode.EventTypeInteractive:
		// Not applied (it might be a redelivery), and said so, as over HTTP.
		cb, _ := ev.Data.(slack.InteractionCallback)
		kind = string(cb.Type)
		payload = m.s.unrecorded(work, &cb, err)
	case err != nil && ev.Type == socketmode.EventTypeSlashCommand:
		m.log.WarnContext(ctx, "could not de-duplicate a slash command envelope; not answered", "envelope_id", env.EnvelopeID, "err", err)
		kind, payload = "slash_command", storeDownReply()
	case err != nil:
		m.log.ErrorContext(ctx, "could not de-duplicate a socket mode envelope; not acked, Slack delivers it again",
			"envelope_id", env.EnvelopeID, "err", err)
		return
	case redelivered:
		kind = "redelivered" // acked empty, nothing applied
	case ev.Type == socketmode.EventTypeInteractive:
		cb, _ := ev.Data.(slack.InteractionCallback)
		kind = string(cb.Type)
		payload = m.s.Interaction(work, &cb)
	case ev.Type == socketmode.EventTypeSlashCommand:
		cmd, _ := ev.Data.(slack.SlashCommand)
		kind, responseURL = "slash_command", cmd.ResponseURL
		payload = m.s.Command(work, cmd)
	case ev.Type == socketmode.EventTypeEventsAPI:
		kind = "event"
		var req EventRequest
		if err := json.Unmarshal(env.Payload, &req); err != nil {
			m.log.WarnContext(ctx, "socket mode event is not an Events API request", "envelope_id", env.EnvelopeID, "err", err)
			break
		}
		if env.RetryAttempt > 0 {
			req.RetryNum, req.RetryReason = strconv.Itoa(env.RetryAttempt), env.RetryReason
		}
		var err error
		if payload, err = m.s.Event(work, req); err != nil {
			return
		}
	default:
		kind = string(ev.Type)
	}
	if reply, ok := payload.(ephemeralReply); ok && tooBigForSocket(reply) {
		// Slack would drop this ack: ack empty, answer through response_url.
		payload = nil
		m.s.opts.Async.Go("response_url", func(ctx context.Context) {
			m.s.respond(ctx, responseURL, blocks.Message{Text: reply.Text, Blocks: reply.Blocks}, false)
		})
	}
	// Not ctx: on shutdown the connection stays open for this ack (Run).
	ackCtx, cancelAck := context.WithTimeout(context.WithoutCancel(ctx), socketAckWait)
	defer cancelAck()
	if err := client.AckCtx(ackCtx, env.EnvelopeID, payload); err != nil {
		m.log.WarnContext(ctx, "could not ack a socket mode envelope; Slack will deliver it again",
			"envelope_id", env.EnvelopeID, "type", kind, "err", err)
		return
	}
	m.lastAck.Store(time.Now().UnixNano())
	m.s.metrics.ack.WithLabelValues(kind).Observe(time.Since(start).Seconds())
}

// redelivered reports whether an interaction or command envelope was
// already applied, by its envelope id, which Slack keeps when it delivers
// an envelope again. Events are de-duplicated by event id instead (Event).
func (m *SocketMode) redelivered(ctx context.Context, ev socketmode.Event) (bool, error) {
	if ev.Type != socketmode.EventTypeInteractive && ev.Type != socketmode.EventTypeSlashCommand {
		return false, nil
	}
	first, err := m.s.firstApplied(ctx, "socket:"+ev.Request.EnvelopeID, envelopeTTL)
	if err != nil {
		return false, fmt.Errorf("de-duplicate envelope %s: %w", ev.Request.EnvelopeID, err)
	}
	if !first {
		m.s.metrics.replays.WithLabelValues("socket").Inc()
		m.log.InfoContext(ctx, "redelivered socket mode envelope acked and ignored",
			"envelope_id", ev.Request.EnvelopeID, "type", ev.Type, "retry_attempt", ev.Request.RetryAttempt)
	}
	return !first, nil
}

func tooBigForSocket(payload any) bool {
	b, err := json.Marshal(payload)
	return err != nil || len(b) > maxSocketAck
}

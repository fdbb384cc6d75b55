// Package sandbox is approvalbot's local sandbox: a web page that plays
// Slack for the members of the emulated workspace, so approvalbot can be
// watched and tried without a Slack app.
//
// The page (embedded, plain HTML/CSS/JS, no network) shows what the Slack
// Web API emulator (internal/slackemu) holds: channels and DMs with every
// message the bot posted or updated, ephemeral messages, the App Home tab
// and open modals, from the point of view of the member the visitor acts
// as. Acting on a control sends what Slack would send: a v0-signed
// block_actions, view_submission, view_closed, slash command or Events API
// request to the bot's own /slack/* endpoints, answered by the same
// handlers Slack's requests reach, under Slack's 3-second ack deadline.
// The sandbox also receives what Slack would receive back (response_url
// replies) and what an agent would (decision responses, in the callback
// inbox, with their Standard Webhooks signature checked).
//
// All of its state lives in memory; the bot's own state stays in Redis.
package sandbox

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"mime"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/approvalbot/approvalbot/internal/slackemu"
	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
)

// DefaultAckTimeout is how long Slack waits for an app to acknowledge an
// interaction, a slash command or an event.
const DefaultAckTimeout = 3 * time.Second

// Options configure a Sandbox.
type Options struct {
	// Emulator is the Slack Web API emulator the bot talks to (required).
	Emulator *slackemu.Server
	// SigningSecret signs the requests sent to the bot, as Slack signs
	// them with the app's signing secret (required).
	SigningSecret string
	// CallbackSecret verifies the decision responses the callback inbox
	// receives (required; whsec_…), as do AgentCallbackSecrets, the agents'
	// own (CALLBACK_SECRETS): the inbox takes a delivery any of them signs.
	CallbackSecret       string
	AgentCallbackSecrets map[string]string
	// BaseURL is where the bot reaches the sandbox, e.g.
	// "http://localhost:8080/sandbox"; the response_urls in payloads start
	// with it (required).
	BaseURL string
	// Command is the app's slash command (default "/approvals").
	Command string
	// AckTimeout is the ack deadline (default DefaultAckTimeout).
	AckTimeout time.Duration
	// Logger logs what the sandbox sends and receives (default: discard).
	Logger *slog.Logger
	// Now is the clock of signatures and timestamps (default time.Now).
	Now func() time.Time
}

// Sandbox is the sandbox's http.Handler, to be served under /sandbox/ (with
// the prefix stripped). Attach the bot's handler before serving.
type Sandbox struct {
	opts Options
	emu  *slackemu.Server
	ws   slackemu.Workspace
	log  *slog.Logger
	whs  []*standardwebhooks.Webhook // CallbackSecret's, then the agents' own
	mux  *http.ServeMux
	bot  atomic.Pointer[http.Handler]

	done      chan struct{} // closed by Close: live streams end
	closeOnce sync.Once

	mu      sync.Mutex
	st      local
	changed chan struct{} // closed and replaced on every change of st
}

// New validates opts and builds the sandbox.
func New(opts Options) (*Sandbox, error) {
	if opts.Emulator == nil || opts.SigningSecret == "" || opts.CallbackSecret == "" || opts.BaseURL == "" {
		return nil, errors.New("sandbox: an emulator, a signing secret, a callback secret and a base URL are required")
	}
	wh, err := standardwebhooks.NewWebhook(opts.CallbackSecret)
	if err != nil {
		return nil, fmt.Errorf("sandbox: callback secret: %w", err)
	}
	whs := []*standardwebhooks.Webhook{wh}
	for agent, secret := range opts.AgentCallbackSecrets {
		own, err := standardwebhooks.NewWebhook(secret)
		if err != nil {
			return nil, fmt.Errorf("sandbox: the callback secret of %q: %w", agent, err)
		}
		whs = append(whs, own)
	}
	opts.BaseURL = strings.TrimRight(opts.BaseURL, "/")
	opts.Command = cmp.Or(opts.Command, "/approvals")
	opts.AckTimeout = cmp.Or(opts.AckTimeout, DefaultAckTimeout)
	if opts.Now == nil {
		opts.Now = time.Now
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	sb := &Sandbox{opts: opts, emu: opts.Emulator, ws: opts.Emulator.Workspace(), log: log, whs: whs,
		done: make(chan struct{}), changed: make(chan struct{})}
	sb.st.init()
	sb.routes()
	return sb, nil
}

// Attach gives the sandbox the bot's HTTP handler, which serves /slack/*.
// The sandbox is built before the service that mounts it, so the handler
// arrives afterwards; until then actions answer dispatch_failed. On a nil
// Sandbox (production mode) it does nothing.
func (sb *Sandbox) Attach(bot http.Handler) {
	if sb != nil {
		sb.bot.Store(&bot)
	}
}

// Close ends the page's live update streams, so that an HTTP server's
// graceful shutdown does not wait for browsers to go away. On a nil
// Sandbox it does nothing.
func (sb *Sandbox) Close() {
	if sb != nil {
		sb.closeOnce.Do(func() { close(sb.done) })
	}
}

// ServeHTTP serves the page, its API, the response_url and inbox endpoints.
func (sb *Sandbox) ServeHTTP(w http.ResponseWriter, r *http.Request) { sb.mux.ServeHTTP(w, r) }

func (sb *Sandbox) routes() {
	mux := http.NewServeMux()
	mux.Handle("GET /{$}", assetHandler("index.html"))
	mux.Handle("GET /static/", staticHandler())
	mux.HandleFunc("GET /archives/{channel}/{ts}", sb.permalink)
	mux.HandleFunc("GET /api/state", sb.handleState)
	mux.HandleFunc("GET /api/events", sb.handleEvents)
	mux.HandleFunc("POST /api/act", sb.handleAct)
	mux.HandleFunc("POST /api/submit", sb.handleSubmit)
	mux.HandleFunc("POST /api/close", sb.handleClose)
	mux.HandleFunc("POST /api/command", sb.handleCommand)
	mux.HandleFunc("POST /api/home", sb.handleHome)
	mux.HandleFunc("POST /api/settings", sb.handleSettings)
	mux.HandleFunc("POST /api/dismiss", sb.handleDismiss)
	// Slack Web API methods ("chat.postMessage") go to the emulator, so its
	// state can be inspected with curl.
	mux.HandleFunc("/api/{method}", func(w http.ResponseWriter, r *http.Request) {
		if !strings.Contains(r.PathValue("method"), ".") {
			http.NotFound(w, r)
			return
		}
		// Only with the token in the Authorization header: Slack takes it
		// in the query too, but then any web page could call a method that
		// posts or deletes (an <img> sends a GET, headers cannot be set
		// without the browser asking the server, which says no).
		if r.URL.Query().Has("token") || !strings.HasPrefix(r.Header.Get("Authorization"), "Bearer ") {
			writeJSON(w, http.StatusUnauthorized, map[string]any{"ok": false, "error": "not_authed",
				"detail": "the sandbox's Web API takes the emulator's token in the Authorization header only"})
			return
		}
		sb.emu.ServeHTTP(w, r)
	})
	mux.HandleFunc("POST /response/{token}", sb.handleResponseURL)
	// The inbox's address is printed at start and a browser GETs it: the
	// page shows what it received.
	mux.HandleFunc("GET /inbox", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Location", "./#/inbox") // relative: the service stripped /sandbox
		w.WriteHeader(http.StatusFound)
	})
	mux.HandleFunc("POST /inbox", sb.handleInbox)
	mux.HandleFunc("POST /inbox/{rest...}", sb.handleInbox)
	sb.mux = mux
}

// permalink opens the page on a message: chat.getPermalink's links in local
// mode point here.
func (sb *Sandbox) permalink(w http.ResponseWriter, r *http.Request) {
	// Relative to the URL the browser asked for, which still has the prefix
	// the service stripped (http.Redirect would resolve it without).
	w.Header().Set("Location", "../../#/c/"+url.PathEscape(r.PathValue("channel"))+"/"+url.PathEscape(r.PathValue("ts")))
	w.WriteHeader(http.StatusFound)
}

// notify wakes the page's live streams after a change of the sandbox's own
// state; it runs with sb.mu held.
func (sb *Sandbox) notify() {
	sb.st.version++
	close(sb.changed)
	sb.changed = make(chan struct{})
}

// member returns the human member id of the workspace.
func (sb *Sandbox) member(id string) (slackemu.User, bool) {
	for _, u := range sb.ws.Users {
		if u.ID == id && !u.IsBot && !u.Deleted {
			return u, true
		}
	}
	return slackemu.User{}, false
}

// canSee reports whether user may read channel: a channel without a member
// list is open to everyone; a DM only to its person.
func (sb *Sandbox) canSee(user, channel string) bool {
	if channel == slackemu.DMChannel(user) {
		return true
	}
	for _, c := range sb.ws.Channels {
		if c.ID == channel {
			return c.Members == nil || slices.Contains(c.Members, user)
		}
	}
	return false
}

// channelName is the name Slack puts in payloads: the channel's, or
// "directmessage" for a DM.
func (sb *Sandbox) channelName(id string) string {
	for _, c := range sb.ws.Channels {
		if c.ID == id {
			return c.Name
		}
	}
	return "directmessage"
}

// actingAs is the member a request from the page acts as.
type actingAs struct {
	User string `json:"user"`
}

func (a *actingAs) actor() string { return a.User }

// decodeActor reads a JSON request from the page into req and returns the
// member it acts as; on failure it has answered.
func (sb *Sandbox) decodeActor(w http.ResponseWriter, r *http.Request, req interface{ actor() string }) (slackemu.User, bool) {
	if !decode(w, r, req) {
		return slackemu.User{}, false
	}
	u, ok := sb.member(req.actor())
	if !ok {
		fail(w, http.StatusBadRequest, "%q is not a member of the workspace", req.actor())
	}
	return u, ok
}

// decode reads a JSON request body from the page. The body must say it is
// JSON: a browser sends a cross-origin POST of any other type (text/plain, a
// form) without asking the server first, and the page API acts as any
// member (the service refuses cross-origin requests too: bot.localGuard).
func decode(w http.ResponseWriter, r *http.Request, v any) bool {
	if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != "application/json" {
		writeJSON(w, http.StatusUnsupportedMediaType, map[string]string{"error": "Content-Type must be application/json"})
		return false
	}
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<20))
	if err := dec.Decode(v); err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "bad request: " + err.Error()})
		return false
	}
	return true
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// fail answers the page with an error it shows.
func fail(w http.ResponseWriter, status int, format string, args ...any) {
	writeJSON(w, status, map[string]string{"error": fmt.Sprintf(format, args...)})
}

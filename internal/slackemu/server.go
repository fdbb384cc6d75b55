package slackemu

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// Options configure a Server. The zero value is usable: it serves
// DefaultWorkspace with the token DefaultToken.
type Options struct {
	// Token is the bot token clients must present (default DefaultToken).
	Token string
	// Workspace is the emulated workspace (default DefaultWorkspace()).
	Workspace *Workspace
	// PermalinkBase replaces "https://<domain>.slack.com" in permalinks
	// returned by chat.getPermalink, e.g. "http://localhost:8080/sandbox".
	PermalinkBase string
	// StrictTriggers makes views.open and views.push accept only trigger
	// ids issued by Server.IssueTriggerID, each once and within TriggerTTL.
	StrictTriggers bool
	// TriggerTTL is how long an issued trigger id stays valid (default 3s).
	TriggerTTL time.Duration
	// EnforcePacing rejects a chat.postMessage to a channel that comes
	// sooner than PacingInterval after the previous accepted post to the
	// same channel, with HTTP 429 and a Retry-After header.
	EnforcePacing bool
	// PacingInterval is the minimum gap between posts to one channel
	// (default 1s). See also Server.SetPacing.
	PacingInterval time.Duration
	// OnMessage, if set, is called with every message posted or updated
	// (not ephemerals), outside the server's lock and before the response
	// is written. Local mode uses it to log messages.
	OnMessage func(Message)
	// Now is the clock (default time.Now). Tests may inject a fake clock to
	// exercise pacing and trigger expiry without sleeping.
	Now func() time.Time
	// EventBuffer is the channel capacity of each Subscribe channel
	// (default 1024).
	EventBuffer int
	// MaxCalls bounds the call log (Calls, RecentCalls): past it the oldest
	// calls are dropped, so a long-running local mode does not grow without
	// end. 0 keeps every call (tests count them).
	MaxCalls int
}

const (
	defaultPacingInterval = time.Second
	defaultTriggerTTL     = 3 * time.Second
	defaultEventBuffer    = 1024
	// maxMessageText is the limit on a message's top-level text.
	maxMessageText = 40000
)

// Server is an in-memory emulator of the Slack Web API. It implements
// http.Handler, answering "/api/<method>" (any path whose last element is
// the method name). All methods are safe for concurrent use.
type Server struct {
	token         string
	dir           *directory
	permalinkBase string
	strict        bool
	triggerTTL    time.Duration
	onMessage     func(Message)
	now           func() time.Time
	eventBuffer   int
	maxCalls      int // Options.MaxCalls

	mu             sync.Mutex
	st             store
	faults         map[string][]*fault
	pacing         bool
	pacingInterval time.Duration
	methodLimits   map[string]int // calls per minute, app-wide (SetMethodLimit)
	lastMicros     int64          // last ts issued, in microseconds
	seq            uint64         // counter for view ids, hashes and trigger ids
	events         hub
	changed        chan struct{} // closed and replaced on every change
	socket         socketMode    // Socket Mode; has its own lock (socket.go)
}

// New returns a Server configured by opts.
func New(opts Options) *Server {
	ws := DefaultWorkspace()
	if opts.Workspace != nil {
		ws = *opts.Workspace
	}
	if ws.Domain == "" {
		ws.Domain = defaultDomain
	}
	s := &Server{
		token:          opts.Token,
		dir:            newDirectory(ws),
		permalinkBase:  opts.PermalinkBase,
		strict:         opts.StrictTriggers,
		triggerTTL:     opts.TriggerTTL,
		onMessage:      opts.OnMessage,
		now:            opts.Now,
		eventBuffer:    opts.EventBuffer,
		maxCalls:       opts.MaxCalls,
		faults:         map[string][]*fault{},
		pacing:         opts.EnforcePacing,
		pacingInterval: opts.PacingInterval,
		changed:        make(chan struct{}),
	}
	if s.token == "" {
		s.token = DefaultToken
	}
	if s.permalinkBase == "" {
		s.permalinkBase = "https://" + ws.Domain + ".slack.com"
	}
	if s.triggerTTL <= 0 {
		s.triggerTTL = defaultTriggerTTL
	}
	if s.now == nil {
		s.now = time.Now
	}
	if s.eventBuffer <= 0 {
		s.eventBuffer = defaultEventBuffer
	}
	if s.pacingInterval <= 0 {
		s.pacingInterval = defaultPacingInterval
	}
	s.st.init()
	return s
}

// Token returns the bot token the server accepts.
func (s *Server) Token() string { return s.token }

// Workspace returns a copy of the emulated workspace.
func (s *Server) Workspace() Workspace { return s.dir.ws.clone() }

// handlerFunc implements one Web API method. It runs with s.mu held and
// must not block.
type handlerFunc func(s *Server, req *apiRequest) result

// handlers maps Web API method names to their implementations.
var handlers = map[string]handlerFunc{
	"apps.connections.open": (*Server).appsConnectionsOpen,
	"auth.test":             (*Server).authTest,
	"chat.postMessage":      (*Server).chatPostMessage,
	"chat.update":           (*Server).chatUpdate,
	"chat.delete":           (*Server).chatDelete,
	"chat.getPermalink":     (*Server).chatGetPermalink,
	"chat.postEphemeral":    (*Server).chatPostEphemeral,
	"conversations.open":    (*Server).conversationsOpen,
	"conversations.history": (*Server).conversationsHistory,
	"conversations.replies": (*Server).conversationsReplies,
	"conversations.info":    (*Server).conversationsInfo,
	"users.info":            (*Server).usersInfo,
	"users.lookupByEmail":   (*Server).usersLookupByEmail,
	"usergroups.users.list": (*Server).usergroupsUsersList,
	"views.open":            (*Server).viewsOpen,
	"views.push":            (*Server).viewsPush,
	"views.update":          (*Server).viewsUpdate,
	"views.publish":         (*Server).viewsPublish,
}

// ServeHTTP answers one Web API request. Like Slack, it answers HTTP 200
// with {"ok":false,"error":"..."} for API errors, and 429 for rate limits.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	req, parseErr := parseRequest(r)
	res := s.handle(req, parseErr)

	if s.onMessage != nil {
		for _, m := range res.messages {
			s.onMessage(m)
		}
	}
	if res.drop {
		// No answer: net/http closes the connection (HTTP/2: resets the
		// stream); the in-process transport turns it into an error.
		panic(http.ErrAbortHandler)
	}

	h := w.Header()
	h.Set("Content-Type", res.contentType())
	if res.retryAfter > 0 {
		h.Set("Retry-After", strconv.Itoa(res.retryAfter))
	}
	w.WriteHeader(res.status)
	_, _ = w.Write(res.body)
}

// handle runs req under the lock and records it as a Call.
func (s *Server) handle(req *apiRequest, parseErr string) result {
	s.mu.Lock()
	defer s.mu.Unlock()
	req.now = s.now()
	res := s.dispatch(req, parseErr)
	if res.status == 0 && !res.drop {
		res.status = http.StatusOK
	}
	call := Call{
		Method:   req.method,
		Params:   req.params,
		Token:    req.token,
		Status:   res.status,
		Error:    res.errCode,
		At:       req.now,
		Response: res.body,
	}
	if res.plain {
		call.Response, _ = json.Marshal(string(res.body))
	}
	s.st.calls = append(s.st.calls, call)
	if limit := s.maxCalls; limit > 0 && len(s.st.calls) > limit+limit/4 {
		// Trim in batches, copying into a fresh slice so the dropped
		// calls' memory is released.
		s.st.calls = append([]Call(nil), s.st.calls[len(s.st.calls)-limit:]...)
	}
	s.publish(Event{Type: EventAPICall, At: req.now, Call: ptr(copyCall(call))})
	s.notify()
	return res
}

// dispatch applies injected faults, authentication and then the method's
// handler. It runs with s.mu held.
func (s *Server) dispatch(req *apiRequest, parseErr string) result {
	f := s.takeFault(req.method)
	if f == nil {
		return s.serve(req, parseErr)
	}
	if !f.afterEffect {
		return f.result()
	}
	// Slack acted, and then its answer was lost.
	res := s.serve(req, parseErr)
	failed := f.result()
	failed.messages = res.messages
	return failed
}

// serve runs the method's handler after authentication. It runs with s.mu
// held.
func (s *Server) serve(req *apiRequest, parseErr string) result {
	h, ok := handlers[req.method]
	if !ok {
		return errResult("unknown_method")
	}
	if parseErr != "" {
		return errResult(parseErr)
	}
	if req.method == appsConnectionsOpen {
		return h(s, req) // takes the app-level token, and checks it itself
	}
	switch req.token {
	case "":
		return errResult("not_authed")
	case s.token:
		if res, limited := s.checkMethodLimit(req.method, req.now); limited {
			return res
		}
		return h(s, req)
	default:
		return errResult("invalid_auth")
	}
}

// result is a handler's answer.
type result struct {
	status     int    // HTTP status; 0 means 200
	retryAfter int    // seconds; sets Retry-After when > 0
	body       []byte // response body, JSON unless plain is set
	plain      bool   // body is text/plain (emulated 5xx pages)
	drop       bool   // no answer at all: the connection is dropped
	errCode    string // Slack error code, recorded in Call.Error
	// messages are passed to Options.OnMessage after the lock is released.
	messages []Message
}

func (r result) contentType() string {
	if r.plain {
		return "text/plain; charset=utf-8"
	}
	return "application/json; charset=utf-8"
}

// okResult answers {"ok":true, ...fields}.
func okResult(fields map[string]any) result {
	return result{body: okBody(true, fields)}
}

// errResult answers {"ok":false,"error":code}.
func errResult(code string) result {
	return result{body: okBody(false, map[string]any{"error": code}), errCode: code}
}

// okBody marshals fields with "ok" as the first key, as Slack does.
func okBody(ok bool, fields map[string]any) []byte {
	var buf bytes.Buffer
	fmt.Fprintf(&buf, `{"ok":%t`, ok)
	if len(fields) > 0 {
		inner, err := json.Marshal(fields)
		if err != nil {
			// Every value marshalled here is built by this package from
			// strings, numbers and validated JSON, so this cannot happen.
			panic(fmt.Sprintf("slackemu: marshal response: %v", err))
		}
		buf.WriteByte(',')
		buf.Write(inner[1:])
	} else {
		buf.WriteByte('}')
	}
	return buf.Bytes()
}

// blockErrResult answers errCode with Slack's "errors" list and
// response_metadata.messages, one entry per validation error.
func blockErrResult(errCode string, errs []BlockError) result {
	list := make([]string, len(errs))
	msgs := make([]string, len(errs))
	for i, e := range errs {
		list[i] = e.Error()
		msgs[i] = "[ERROR] " + e.Error()
	}
	return result{
		body: okBody(false, map[string]any{
			"error":             errCode,
			"errors":            list,
			"response_metadata": map[string]any{"messages": msgs},
		}),
		errCode: errCode,
	}
}

// nextTS returns a new message timestamp "<unix seconds>.<6 digits>",
// strictly greater than every ts issued before by this server.
func (s *Server) nextTS(now time.Time) string {
	us := now.UnixMicro()
	if us <= s.lastMicros {
		us = s.lastMicros + 1
	}
	s.lastMicros = us
	return fmt.Sprintf("%d.%06d", us/1e6, us%1e6)
}

// nextSeq returns a server-wide counter value, for generated ids.
func (s *Server) nextSeq() uint64 {
	s.seq++
	return s.seq
}

// notify wakes every WaitFor. It runs with s.mu held.
func (s *Server) notify() {
	close(s.changed)
	s.changed = make(chan struct{})
}

// Reset forgets all recorded calls, messages, ephemerals, views, opened DMs,
// pending faults, issued triggers and pacing history. The workspace, the
// options, the pacing setting and subscriptions are kept, and timestamps
// keep increasing. Subscribers receive an EventReset.
func (s *Server) Reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.st.init()
	s.faults = map[string][]*fault{}
	s.publish(Event{Type: EventReset, At: s.now()})
	s.notify()
}

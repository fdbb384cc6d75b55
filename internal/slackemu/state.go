package slackemu

import (
	"bytes"
	"encoding/json"
	"maps"
	"slices"
	"time"
)

// Call is one recorded Web API request, successful or not.
type Call struct {
	Method string `json:"method"` // e.g. "chat.postMessage"
	// Params holds the request's parameters from the query string, the
	// form body or the top-level keys of a JSON body (body wins). JSON
	// values that are not strings (objects, arrays, numbers, booleans) are
	// kept as their compact JSON text; so "blocks" and "view" are always
	// JSON text, whichever way they were sent. The token is in Token, not
	// here.
	Params map[string]string `json:"params"`
	Token  string            `json:"token"`  // from "Authorization: Bearer" or the token parameter
	Status int               `json:"status"` // HTTP status answered
	// Error is the Slack error code answered ("ratelimited" for 429s), or
	// "" for successes and for injected non-JSON HTTP errors.
	Error string    `json:"error,omitempty"`
	At    time.Time `json:"at"`
	// Response is the response body as sent; a non-JSON body (injected
	// 5xx) is stored as a JSON string, so Response is always valid JSON.
	Response json.RawMessage `json:"response"`
}

// Message is the current state of a message in a channel or DM.
type Message struct {
	Channel     string          `json:"channel"`                   // conversation id (C…, D… for DMs)
	TS          string          `json:"ts"`                        // "<unix seconds>.<6 digits>"
	ThreadTS    string          `json:"thread_ts,omitempty"`       // parent ts for thread replies, else ""
	User        string          `json:"user"`                      // author: the bot user, or a user given to PostAsUser
	Text        string          `json:"text"`                      // top-level text
	Blocks      json.RawMessage `json:"blocks,omitempty"`          // compact JSON array, or nil
	Attachments json.RawMessage `json:"attachments,omitempty"`     // compact JSON array, or nil
	Metadata    json.RawMessage `json:"metadata,omitempty"`        // the metadata object as sent, or nil
	Broadcast   bool            `json:"reply_broadcast,omitempty"` // thread reply also sent to the channel
	Edited      int             `json:"edited"`                    // number of chat.update calls applied
	EditedTS    string          `json:"edited_ts,omitempty"`       // ts of the last edit, if any
	PostedAt    time.Time       `json:"posted_at"`
	UpdatedAt   time.Time       `json:"updated_at"` // last chat.update; zero if never edited
}

// Ephemeral is a message posted with chat.postEphemeral, visible only to
// User in Channel.
type Ephemeral struct {
	Channel  string          `json:"channel"`
	User     string          `json:"user"`
	TS       string          `json:"ts"` // the message_ts answered
	ThreadTS string          `json:"thread_ts,omitempty"`
	Text     string          `json:"text"`
	Blocks   json.RawMessage `json:"blocks,omitempty"`
	PostedAt time.Time       `json:"posted_at"`
}

// View is a modal opened with views.open/views.push or a Home tab
// published with views.publish, in its latest version.
type View struct {
	ID             string `json:"id"`                   // "V…"
	Type           string `json:"type"`                 // "modal" or "home"
	User           string `json:"user,omitempty"`       // Home tabs: the user it was published for
	TriggerID      string `json:"trigger_id,omitempty"` // modals: the trigger id used to open it
	ExternalID     string `json:"external_id,omitempty"`
	CallbackID     string `json:"callback_id,omitempty"`
	Hash           string `json:"hash"` // changes on every update
	RootViewID     string `json:"root_view_id"`
	PreviousViewID string `json:"previous_view_id,omitempty"` // views.push: the view below it
	// JSON is the view object as the bot last sent it (compact).
	JSON      json.RawMessage `json:"view"`
	Updates   int             `json:"updates"` // number of views.update / re-publishes applied
	OpenedAt  time.Time       `json:"opened_at"`
	UpdatedAt time.Time       `json:"updated_at"`
}

// store is the server's mutable state, guarded by Server.mu.
type store struct {
	calls      []Call
	convs      map[string]*convLog // by conversation id
	ephemerals []Ephemeral
	views      map[string]*View
	viewOrder  []string          // view ids in opening order
	viewByExt  map[string]string // external_id → view id
	homeByUser map[string]string // user id → home view id
	openedDMs  map[string]bool   // DM ids opened or posted to
	lastPost   map[string]time.Time
	triggers   map[string]*trigger
	// recentCalls are the times of a rate-limited method's calls within
	// its window (SetMethodLimit), oldest first.
	recentCalls map[string][]time.Time
}

// convLog holds the messages of one conversation in ts order.
type convLog struct {
	msgs []*Message
	byTS map[string]*Message
}

// trigger is a trigger id issued by IssueTriggerID.
type trigger struct {
	issued time.Time
	used   bool
}

func (st *store) init() {
	*st = store{
		convs:       map[string]*convLog{},
		views:       map[string]*View{},
		viewByExt:   map[string]string{},
		homeByUser:  map[string]string{},
		openedDMs:   map[string]bool{},
		lastPost:    map[string]time.Time{},
		triggers:    map[string]*trigger{},
		recentCalls: map[string][]time.Time{},
	}
}

// conv returns the log of conversation id, creating it.
func (st *store) conv(id string) *convLog {
	c := st.convs[id]
	if c == nil {
		c = &convLog{byTS: map[string]*Message{}}
		st.convs[id] = c
	}
	return c
}

func (c *convLog) add(m *Message) {
	c.msgs = append(c.msgs, m)
	c.byTS[m.TS] = m
}

func (c *convLog) remove(ts string) {
	delete(c.byTS, ts)
	c.msgs = slices.DeleteFunc(c.msgs, func(m *Message) bool { return m.TS == ts })
}

// Snapshot gives read access to the server's state inside a WaitFor
// condition. It is valid only during the call of the condition (which runs
// with the server's lock held), must not be retained, and the condition
// must not call methods of the Server. Every method returns copies.
type Snapshot struct {
	st  *store
	dir *directory
}

// Calls returns every recorded call, oldest first.
func (sn *Snapshot) Calls() []Call {
	out := make([]Call, len(sn.st.calls))
	for i, c := range sn.st.calls {
		out[i] = copyCall(c)
	}
	return out
}

// CallsTo returns the recorded calls of method, oldest first.
func (sn *Snapshot) CallsTo(method string) []Call {
	var out []Call
	for _, c := range sn.st.calls {
		if c.Method == method {
			out = append(out, copyCall(c))
		}
	}
	return out
}

// CountCalls returns how many calls of method were recorded ("" counts all).
func (sn *Snapshot) CountCalls(method string) int {
	if method == "" {
		return len(sn.st.calls)
	}
	n := 0
	for _, c := range sn.st.calls {
		if c.Method == method {
			n++
		}
	}
	return n
}

// Messages returns the current messages of a conversation, thread replies
// included, oldest first. channel may be an id, "#name", "name" or a user
// id (meaning the user's DM).
func (sn *Snapshot) Messages(channel string) []Message {
	conv, code := sn.dir.resolve(channel)
	if code != "" {
		return nil
	}
	c := sn.st.convs[conv.id]
	if c == nil {
		return nil
	}
	out := make([]Message, len(c.msgs))
	for i, m := range c.msgs {
		out[i] = m.clone()
	}
	return out
}

// Message returns the message with ts in channel (see Messages).
func (sn *Snapshot) Message(channel, ts string) (Message, bool) {
	conv, code := sn.dir.resolve(channel)
	if code != "" {
		return Message{}, false
	}
	if c := sn.st.convs[conv.id]; c != nil {
		if m, ok := c.byTS[ts]; ok {
			return m.clone(), true
		}
	}
	return Message{}, false
}

// Ephemerals returns the ephemeral messages posted in channel for user,
// oldest first. An empty channel or user matches any.
func (sn *Snapshot) Ephemerals(channel, user string) []Ephemeral {
	id := ""
	if channel != "" {
		conv, code := sn.dir.resolve(channel)
		if code != "" {
			return nil
		}
		id = conv.id
	}
	var out []Ephemeral
	for _, e := range sn.st.ephemerals {
		if (id == "" || e.Channel == id) && (user == "" || e.User == user) {
			out = append(out, e.clone())
		}
	}
	return out
}

// Views returns every view (modals and Home tabs) in opening order.
func (sn *Snapshot) Views() []View {
	out := make([]View, 0, len(sn.st.viewOrder))
	for _, id := range sn.st.viewOrder {
		out = append(out, sn.st.views[id].clone())
	}
	return out
}

// View returns the view with the given id.
func (sn *Snapshot) View(id string) (View, bool) {
	v, ok := sn.st.views[id]
	if !ok {
		return View{}, false
	}
	return v.clone(), true
}

// HomeView returns the Home tab view last published for user, as the bot
// sent it.
func (sn *Snapshot) HomeView(user string) (json.RawMessage, bool) {
	id, ok := sn.st.homeByUser[user]
	if !ok {
		return nil, false
	}
	return bytes.Clone(sn.st.views[id].JSON), true
}

func copyCall(c Call) Call {
	c.Params = maps.Clone(c.Params)
	c.Response = bytes.Clone(c.Response)
	return c
}

// clone returns a copy of m that shares no memory with it.
func (m *Message) clone() Message {
	c := *m
	c.Blocks = bytes.Clone(m.Blocks)
	c.Attachments = bytes.Clone(m.Attachments)
	c.Metadata = bytes.Clone(m.Metadata)
	return c
}

// clone returns a copy of e that shares no memory with it.
func (e Ephemeral) clone() Ephemeral {
	e.Blocks = bytes.Clone(e.Blocks)
	return e
}

// clone returns a copy of v that shares no memory with it.
func (v *View) clone() View {
	c := *v
	c.JSON = bytes.Clone(v.JSON)
	return c
}

// snapshot runs fn with a Snapshot of the current state under the lock.
func (s *Server) snapshot(fn func(sn *Snapshot)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	fn(&Snapshot{st: &s.st, dir: s.dir})
}

// Calls returns every recorded call, oldest first.
func (s *Server) Calls() (out []Call) {
	s.snapshot(func(sn *Snapshot) { out = sn.Calls() })
	return out
}

// CallsTo returns the recorded calls of method, oldest first.
func (s *Server) CallsTo(method string) (out []Call) {
	s.snapshot(func(sn *Snapshot) { out = sn.CallsTo(method) })
	return out
}

// Messages returns the current messages of a conversation, oldest first,
// thread replies included. channel may be an id, "#name", "name" or a user
// id (the user's DM).
func (s *Server) Messages(channel string) (out []Message) {
	s.snapshot(func(sn *Snapshot) { out = sn.Messages(channel) })
	return out
}

// Message returns the message with ts in channel.
func (s *Server) Message(channel, ts string) (m Message, ok bool) {
	s.snapshot(func(sn *Snapshot) { m, ok = sn.Message(channel, ts) })
	return m, ok
}

// Ephemerals returns the ephemeral messages posted in channel for user,
// oldest first. An empty channel or user matches any.
func (s *Server) Ephemerals(channel, user string) (out []Ephemeral) {
	s.snapshot(func(sn *Snapshot) { out = sn.Ephemerals(channel, user) })
	return out
}

// Views returns every view (modals and Home tabs) in opening order.
func (s *Server) Views() (out []View) {
	s.snapshot(func(sn *Snapshot) { out = sn.Views() })
	return out
}

// View returns the view with the given id.
func (s *Server) View(id string) (v View, ok bool) {
	s.snapshot(func(sn *Snapshot) { v, ok = sn.View(id) })
	return v, ok
}

// HomeView returns the Home tab view last published for user.
func (s *Server) HomeView(user string) (v json.RawMessage, ok bool) {
	s.snapshot(func(sn *Snapshot) { v, ok = sn.HomeView(user) })
	return v, ok
}

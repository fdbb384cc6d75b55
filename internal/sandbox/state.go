package sandbox

import (
	"encoding/json"
	"net/http"
	"time"

	"github.com/approvalbot/approvalbot/internal/slackemu"
)

// view is the page's picture of the workspace for one member.
type view struct {
	Version  uint64      `json:"version"`
	Team     teamView    `json:"team"`
	Me       string      `json:"me"`
	Command  string      `json:"command"`
	Users    []userView  `json:"users"`
	Groups   []groupView `json:"groups"`
	Channels []convView  `json:"channels"` // the member's channels, then their DM with the bot
	// Ephemerals are the messages only this member sees.
	Ephemerals []ephemeralView `json:"ephemerals"`
	Home       *surfaceView    `json:"home"`   // the Home tab the bot published for the member
	Modals     []surfaceView   `json:"modals"` // open dialogs, the topmost last
	Inbox      []Delivery      `json:"inbox"`
	Calls      []callView      `json:"calls"`   // the bot's latest Web API calls
	Notices    []string        `json:"notices"` // what Slack would refuse, that the sandbox saw
	Pacing     bool            `json:"pacing"`
}

type teamView struct {
	ID      string `json:"id"`
	Name    string `json:"name"`
	BotID   string `json:"bot_user_id"`
	BotName string `json:"bot_name"`
}

type userView struct {
	ID       string `json:"id"`
	Name     string `json:"name"`
	RealName string `json:"real_name"`
	Title    string `json:"title,omitempty"`
	Email    string `json:"email,omitempty"`
	IsBot    bool   `json:"is_bot,omitempty"`
}

type groupView struct {
	ID      string   `json:"id"`
	Handle  string   `json:"handle"`
	Name    string   `json:"name"`
	Members []string `json:"members"`
}

type convView struct {
	ID        string        `json:"id"`
	Name      string        `json:"name"`
	DM        bool          `json:"dm,omitempty"`
	IsPrivate bool          `json:"is_private,omitempty"`
	BotMember bool          `json:"bot_member"`
	Messages  []messageView `json:"messages"`
}

type messageView struct {
	TS       string    `json:"ts"`
	ThreadTS string    `json:"thread_ts,omitempty"`
	User     string    `json:"user"`
	Text     string    `json:"text"`
	Blocks   blockList `json:"blocks"`
	Edited   int       `json:"edited"`
}

type ephemeralView struct {
	Ephemeral
	Blocks blockList `json:"blocks"`
}

// surfaceView is a Home tab or a modal, with the ids the page acts on.
type surfaceView struct {
	ID     string            `json:"id"`
	Hash   string            `json:"hash"`
	View   json.RawMessage   `json:"view"`
	Blocks blockList         `json:"blocks"`
	Errors map[string]string `json:"errors,omitempty"`
}

type callView struct {
	At     time.Time       `json:"at"`
	Method string          `json:"method"`
	Status int             `json:"status"`
	Error  string          `json:"error,omitempty"`
	Detail json.RawMessage `json:"detail,omitempty"` // the response of a failed call
}

// recentCalls is how many of the bot's Web API calls the page lists.
const recentCalls = 60

// handleState is GET /api/state?user=U…: everything the page shows.
func (sb *Sandbox) handleState(w http.ResponseWriter, r *http.Request) {
	me := r.URL.Query().Get("user")
	if _, ok := sb.member(me); !ok {
		me = sb.defaultMember()
	}
	writeJSON(w, http.StatusOK, sb.viewOf(me))
}

// defaultMember is the first human member, whom the page acts as at first.
func (sb *Sandbox) defaultMember() string {
	for _, u := range sb.ws.Users {
		if !u.IsBot && !u.Deleted {
			return u.ID
		}
	}
	return ""
}

func (sb *Sandbox) viewOf(me string) view {
	sb.mu.Lock()
	version := sb.st.version
	inbox := append([]Delivery(nil), sb.st.inbox...)
	notices := append([]string(nil), sb.st.notices...)
	sb.mu.Unlock()

	ws := sb.ws
	// Lists are never null: the page iterates them.
	v := view{Version: version, Me: me, Command: sb.opts.Command, Inbox: inbox, Notices: notices,
		Team:  teamView{ID: ws.TeamID, Name: ws.TeamName, BotID: ws.BotUserID, BotName: ws.BotName},
		Users: []userView{}, Groups: []groupView{}, Channels: []convView{}, Ephemerals: []ephemeralView{},
		Modals: []surfaceView{}, Calls: []callView{}}
	if v.Inbox == nil {
		v.Inbox = []Delivery{}
	}
	if v.Notices == nil {
		v.Notices = []string{}
	}
	v.Pacing, _ = sb.emu.Pacing()
	for _, u := range ws.Users {
		v.Users = append(v.Users, userView{ID: u.ID, Name: u.Name, RealName: u.RealName, Title: u.Title, Email: u.Email, IsBot: u.IsBot})
	}
	for _, g := range ws.UserGroups {
		v.Groups = append(v.Groups, groupView{ID: g.ID, Handle: g.Handle, Name: g.Name, Members: g.Members})
	}
	for _, c := range ws.Channels {
		if sb.canSee(me, c.ID) {
			v.Channels = append(v.Channels, convView{ID: c.ID, Name: c.Name, IsPrivate: c.IsPrivate, BotMember: c.IsMember,
				Messages: messagesOf(sb.emu.Messages(c.ID))})
		}
	}
	dm := slackemu.DMChannel(me)
	v.Channels = append(v.Channels, convView{ID: dm, Name: ws.BotName, DM: true, BotMember: true,
		Messages: messagesOf(sb.emu.Messages(dm))})
	for _, e := range sb.ephemerals(me) {
		bl, _ := decodeBlocks(e.Blocks)
		v.Ephemerals = append(v.Ephemerals, ephemeralView{Ephemeral: e, Blocks: bl})
	}
	if home, ok := sb.viewFor(me, "home", ""); ok {
		v.Home = sb.surfaceOf(home)
	}
	for _, m := range sb.openModals(me) {
		v.Modals = append(v.Modals, *sb.surfaceOf(m))
	}
	for _, c := range sb.emu.RecentCalls(recentCalls) {
		cv := callView{At: c.At, Method: c.Method, Status: c.Status, Error: c.Error}
		if c.Error != "" || c.Status != http.StatusOK {
			cv.Detail = c.Response
		}
		v.Calls = append(v.Calls, cv)
	}
	return v
}

func messagesOf(msgs []slackemu.Message) []messageView {
	out := make([]messageView, 0, len(msgs))
	for _, m := range msgs {
		bl, _ := decodeBlocks(m.Blocks)
		out = append(out, messageView{TS: m.TS, ThreadTS: m.ThreadTS, User: m.User, Text: m.Text, Blocks: bl, Edited: m.Edited})
	}
	return out
}

func (sb *Sandbox) surfaceOf(v slackemu.View) *surfaceView {
	bl, _ := viewBlocks(v.JSON)
	sv := &surfaceView{ID: v.ID, Hash: v.Hash, View: v.JSON, Blocks: bl}
	sb.mu.Lock()
	sv.Errors = sb.st.viewErrors[v.ID]
	sb.mu.Unlock()
	return sv
}

package sandbox

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/approvalbot/approvalbot/internal/slackemu"
)

// Slack lets an app use a response_url up to five times within 30 minutes.
const (
	responseURLUses = 5
	responseURLTTL  = 30 * time.Minute
	// maxKept bounds the lists the sandbox keeps in memory.
	maxKept = 200
)

// local is the sandbox's own state: what Slack's clients and servers know
// beyond the Web API emulator. Guarded by Sandbox.mu.
type local struct {
	version    uint64
	seq        uint64
	triggers   map[string]string // trigger id → the member who acted
	closed     map[string]bool   // modal view ids closed in the page
	viewErrors map[string]map[string]string
	ephemerals []Ephemeral     // command replies, response_url posts, Slackbot notices
	hidden     map[string]bool // emulator ephemerals replaced or deleted through a response_url
	responses  map[string]*target
	inbox      []Delivery
	notices    []string // what the bot did that Slack would refuse, newest last
}

func (st *local) init() {
	*st = local{triggers: map[string]string{}, closed: map[string]bool{}, viewErrors: map[string]map[string]string{},
		hidden: map[string]bool{}, responses: map[string]*target{}}
}

func (st *local) next() uint64 { st.seq++; return st.seq }

// Ephemeral is a message only one member sees: chat.postEphemeral's, a
// slash command's reply, a response_url post, or Slackbot telling the
// member that something failed.
type Ephemeral struct {
	ID       string          `json:"id"`
	Channel  string          `json:"channel"`
	User     string          `json:"user"`
	TS       string          `json:"ts"`
	From     string          `json:"from"`   // "bot" or "slackbot"
	Source   string          `json:"source"` // how it arrived
	Text     string          `json:"text"`
	Blocks   json.RawMessage `json:"blocks,omitempty"`
	PostedAt time.Time       `json:"posted_at"`
}

// target is what a response_url answers into: an ephemeral (by id) or a
// message (by channel and ts), for the member who acted.
type target struct {
	user, channel string
	ephemeral     string // id of the ephemeral, if the action came from one
	messageTS     string // ts of the message, if it came from one
	uses          int
	expires       time.Time
}

// newResponseURL issues a response_url for an action or a command.
func (sb *Sandbox) newResponseURL(t target) string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	token := fmt.Sprintf("%x", b)
	t.expires = sb.opts.Now().Add(responseURLTTL)
	sb.mu.Lock()
	defer sb.mu.Unlock()
	for tok, old := range sb.st.responses { // forget expired ones
		if sb.opts.Now().After(old.expires) {
			delete(sb.st.responses, tok)
		}
	}
	sb.st.responses[token] = &t
	return sb.opts.BaseURL + "/response/" + url.PathEscape(token)
}

// addEphemeral stores an ephemeral for user; it runs with sb.mu held.
func (sb *Sandbox) addEphemeral(e Ephemeral) Ephemeral {
	now := sb.opts.Now()
	e.ID = fmt.Sprintf("s%d", sb.st.next())
	e.TS = slackTS(now)
	e.PostedAt = now
	sb.st.ephemerals = append(sb.st.ephemerals, e)
	if len(sb.st.ephemerals) > maxKept {
		sb.st.ephemerals = sb.st.ephemerals[len(sb.st.ephemerals)-maxKept:]
	}
	sb.notify()
	return e
}

// slackbotSays shows user a notice from Slackbot in channel, as Slack does
// when a command fails.
func (sb *Sandbox) slackbotSays(channel, user, source, text string) {
	sb.mu.Lock()
	defer sb.mu.Unlock()
	sb.addEphemeral(Ephemeral{Channel: channel, User: user, From: "slackbot", Source: source, Text: text})
}

// reply is a message sent to a response_url or answered to a command.
type reply struct {
	Text            string          `json:"text"`
	Blocks          json.RawMessage `json:"blocks"`
	ResponseType    string          `json:"response_type"`
	ReplaceOriginal bool            `json:"replace_original"`
	DeleteOriginal  bool            `json:"delete_original"`
}

// check is what Slack verifies of a reply before showing it: content, and
// valid blocks. The result is a Slack error with its reasons, or "".
func (r reply) check() string {
	blocks := r.Blocks
	if string(blocks) == "null" {
		blocks = nil
	}
	if r.Text == "" && (len(blocks) == 0 || string(blocks) == "[]") && !r.DeleteOriginal {
		return "no_text"
	}
	if len(blocks) > 0 {
		if errs := slackemu.ValidateBlocks(slackemu.SurfaceMessage, blocks); len(errs) > 0 {
			msgs := make([]string, len(errs))
			for i, e := range errs {
				msgs[i] = e.Error()
			}
			return "invalid_blocks: " + strings.Join(msgs, "; ")
		}
	}
	return ""
}

// handleResponseURL is POST /response/{token}: the bot answering an action
// or a command later, through the response_url Slack gave it.
func (sb *Sandbox) handleResponseURL(w http.ResponseWriter, r *http.Request) {
	var rp reply
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<20)).Decode(&rp); err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]any{"ok": false, "error": "invalid_payload"})
		return
	}
	if bad := rp.check(); bad != "" {
		sb.note(r.Context(), "a response_url reply was refused: "+bad)
		writeJSON(w, http.StatusBadRequest, map[string]any{"ok": false, "error": bad})
		return
	}
	sb.mu.Lock()
	defer sb.mu.Unlock()
	t := sb.st.responses[r.PathValue("token")]
	switch {
	case t == nil || sb.opts.Now().After(t.expires):
		writeJSON(w, http.StatusNotFound, map[string]any{"ok": false, "error": "expired_url"})
		return
	case t.uses >= responseURLUses:
		writeJSON(w, http.StatusNotFound, map[string]any{"ok": false, "error": "used_url"})
		return
	}
	t.uses++
	sb.applyReply(r.Context(), t, rp, "response_url")
	writeJSON(w, http.StatusOK, map[string]any{"ok": true})
}

// applyReply shows a reply to t's member: it replaces or deletes the
// ephemeral it answers, or adds a new one. Replies that would change a
// channel message for everyone (in_channel, or replacing a message) are
// noted and not applied: approvalbot never sends them, and the sandbox
// does not fake the bot's own Web API calls. It runs with sb.mu held.
func (sb *Sandbox) applyReply(ctx context.Context, t *target, rp reply, source string) {
	if rp.ResponseType == "in_channel" || (t.messageTS != "" && (rp.ReplaceOriginal || rp.DeleteOriginal)) {
		sb.noteLocked(ctx, "a "+source+" reply asked to change a channel message (in_channel, replace_original or "+
			"delete_original on a message); the sandbox shows it only to the member")
	}
	blocks := rp.Blocks
	if string(blocks) == "null" {
		blocks = nil
	}
	if t.ephemeral != "" && (rp.ReplaceOriginal || rp.DeleteOriginal) {
		i := slices.IndexFunc(sb.st.ephemerals, func(e Ephemeral) bool { return e.ID == t.ephemeral })
		if i < 0 {
			sb.st.hidden[t.ephemeral] = true // an emulator ephemeral
		} else {
			sb.st.ephemerals = slices.Delete(sb.st.ephemerals, i, i+1)
		}
		if rp.DeleteOriginal {
			sb.notify()
			return
		}
	}
	e := sb.addEphemeral(Ephemeral{Channel: t.channel, User: t.user, From: "bot", Source: source, Text: rp.Text, Blocks: blocks})
	if t.ephemeral != "" && rp.ReplaceOriginal {
		t.ephemeral = e.ID // a second reply replaces the first one's replacement
	}
}

// note records something Slack would have refused or the sandbox cannot
// show, for the page's log.
func (sb *Sandbox) note(ctx context.Context, text string) {
	sb.mu.Lock()
	defer sb.mu.Unlock()
	sb.noteLocked(ctx, text)
}

func (sb *Sandbox) noteLocked(ctx context.Context, text string) {
	sb.log.WarnContext(ctx, "sandbox: "+text)
	sb.st.notices = append(sb.st.notices, sb.opts.Now().Format("15:04:05")+" "+text)
	if len(sb.st.notices) > maxKept {
		sb.st.notices = sb.st.notices[1:]
	}
	sb.notify()
}

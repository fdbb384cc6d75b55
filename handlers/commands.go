package handlers

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/approvalbot/approvalbot/approval"
	"github.com/approvalbot/approvalbot/blocks"
	"github.com/approvalbot/approvalbot/store"
	"github.com/slack-go/slack"
)

// Lister pages through open requests; *store.Store implements it.
type Lister interface {
	ListOpen(ctx context.Context, q store.OpenQuery) (store.Page, error)
}

// DefaultCommand is the slash command approvalbot answers unless configured.
const DefaultCommand = "/approvals"

// defaultCommandBudget is how long the command endpoint works before it
// acks with "working on it" and answers through response_url instead
// (Slack wants the ack within 3 s).
const defaultCommandBudget = 2 * time.Second

// commandQuery is one listing or lookup a user asked for.
type commandQuery struct {
	sub, arg, cursor    string
	user                string
	channelID, chanName string
}

// commands is POST /slack/commands: the slash command.
func (s *Slack) commands(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	form, body, ok := s.verified(w, r)
	if !ok {
		return
	}
	defer func() { s.metrics.ack.WithLabelValues("slash_command").Observe(time.Since(start).Seconds()) }()
	ctx, cancel := s.storeDeadline(r.Context())
	first, err := s.replayed(ctx, r, body)
	cancel()
	switch {
	case err != nil:
		s.log.WarnContext(r.Context(), "could not check a slash command for replay; not answered", "user", form.Get("user_id"), "err", err)
		writeAck(w, storeDownReply())
		return
	case !first:
		w.WriteHeader(http.StatusOK) // a replay: nothing applied, nothing said
		return
	}
	writeAck(w, s.Command(r.Context(), slack.SlashCommand{
		Command: form.Get("command"), Text: form.Get("text"), UserID: form.Get("user_id"),
		ChannelID: form.Get("channel_id"), ChannelName: form.Get("channel_name"), ResponseURL: form.Get("response_url"),
	}))
}

// storeDownReply answers a slash command that could not be checked for a
// replay because Redis did not answer in time: it is not run.
func storeDownReply() ephemeralReply {
	return ephemeral(blocks.Notice(":warning: The bot's database did not answer in time. Please try again in a moment."))
}

// Command answers a slash command, whichever transport brought it, with the
// ephemeral reply its acknowledgement carries. An answer that takes longer
// than CommandBudget is acked with "working on it" and follows through the
// command's response_url, so the ack always comes within Slack's 3 s.
func (s *Slack) Command(ctx context.Context, cmd slack.SlashCommand) any {
	if cmd.Command != s.opts.Command {
		return ephemeral(blocks.Notice(fmt.Sprintf(":warning: This endpoint answers `%s`, not `%s`.",
			blocks.Escape(s.opts.Command), blocks.Escape(cmd.Command))))
	}
	sub, arg, _ := strings.Cut(strings.TrimSpace(cmd.Text), " ")
	q := commandQuery{sub: strings.ToLower(sub), arg: strings.TrimSpace(arg), user: cmd.UserID,
		channelID: cmd.ChannelID, chanName: cmd.ChannelName}

	// The answer outlives the ack when it is slow: it must not end with it.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	done := make(chan blocks.Message, 1)
	go func() {
		defer cancel()
		done <- s.answer(ctx, q)
	}()
	select {
	case msg := <-done:
		return ephemeral(msg)
	case <-time.After(s.opts.CommandBudget):
		// Too slow for Slack's 3 s: ack now, answer through response_url.
		responseURL := cmd.ResponseURL
		s.opts.Async.Go("response_url", func(ctx context.Context) {
			msg := <-done
			s.respond(ctx, responseURL, msg, false)
		})
		return ephemeral(blocks.Notice(":hourglass_flowing_sand: Working on it…"))
	}
}

// answer runs a subcommand.
func (s *Slack) answer(ctx context.Context, q commandQuery) blocks.Message {
	switch q.sub {
	case "", "mine", "channel", "all", "overdue":
		return s.listing(ctx, q)
	case "show":
		return s.show(ctx, q.arg)
	case "grants":
		return s.grantList(ctx)
	default:
		return blocks.Notice(s.helpText())
	}
}

func (s *Slack) helpText() string {
	c := blocks.Escape(s.opts.Command)
	return strings.Join([]string{
		"*" + c + "* lists decision requests waiting in Slack:",
		"• `" + c + "` or `" + c + " mine`: open requests you may decide: those that name you (or a group or role of yours), were escalated to you, or name nobody when you are one of the default reviewers",
		"• `" + c + " channel`: open requests in this channel",
		"• `" + c + " all`: every open request",
		"• `" + c + " overdue`: open requests past their deadline, or escalated",
		"• `" + c + " show &lt;id&gt;`: one request in full",
		"• `" + c + " grants`: standing approvals (\"Approve similar…\") in force, to revoke",
		"• `" + c + " help`: this help",
	}, "\n")
}

// listing answers mine, channel, all and overdue, one page at a time.
func (s *Slack) listing(ctx context.Context, q commandQuery) blocks.Message {
	sub := q.sub
	if sub == "" {
		sub = "mine"
	}
	query := store.OpenQuery{Limit: blocks.MaxListItems, Cursor: q.cursor, Now: s.opts.Now()}
	var heading, empty string
	switch sub {
	case "mine":
		query.Kind, query.Reviewer, query.Unnamed = store.OpenReviewer, q.user, s.defaultReviewer(ctx, q.user)
		heading, empty = "Open requests you may decide", "Nothing is waiting for you. :tada:"
	case "channel":
		query.Kind, query.Channels = store.OpenChannel, []string{q.channelID}
		if q.chanName != "" {
			query.Channels = append(query.Channels, "#"+q.chanName)
		}
		heading, empty = "Open requests in this channel", "No open request was posted to this channel."
	case "all":
		query.Kind = store.OpenAll
		heading, empty = "All open requests", "There are no open requests."
	case "overdue":
		query.Kind = store.OpenOverdue
		heading, empty = "Overdue or escalated requests", "Nothing is overdue or escalated."
	}
	page, err := s.opts.Lists.ListOpen(ctx, query)
	switch {
	case errors.Is(err, store.ErrBadCursor):
		return blocks.Notice(":warning: That page is no longer available; run the command again.")
	case err != nil:
		s.log.ErrorContext(ctx, "slash command listing failed", "sub", sub, "user", q.user, "err", err)
		return blocks.Notice(":warning: The list could not be loaded; please try again.")
	}
	l := blocks.Listing{Heading: heading, Empty: empty, Now: s.opts.Now()}
	if q.cursor != "" {
		l.Heading += " (continued)"
	}
	l.Items = s.listItems(ctx, page.Items)
	if page.NextCursor != "" {
		l.Next = sub + " " + page.NextCursor
	}
	return blocks.List(l)
}

// show renders one request as its message shows it.
func (s *Slack) show(ctx context.Context, id string) blocks.Message {
	if id == "" {
		return blocks.Notice("Which request? Use `" + blocks.Escape(s.opts.Command) + " show &lt;id&gt;`.")
	}
	rec, req, err := s.opts.Requests.Load(ctx, id)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return blocks.Notice(fmt.Sprintf(":grey_question: There is no request with id `%s`.", blocks.Escape(id)))
	case err != nil:
		s.log.ErrorContext(ctx, "slash command show failed", "request_id", id, "err", err)
		return blocks.Notice(":warning: The request could not be loaded; please try again.")
	}
	parent, err := approval.FollowUpOf(ctx, s.opts.Requests, rec, req)
	if err != nil {
		s.log.WarnContext(ctx, "could not look up the request this one follows up; showing it without the line", "request_id", id, "err", err)
	}
	return blocks.Render(req, approval.View(rec, s.opts.Defaults, approval.WithGrantMax(s.opts.GrantMax), approval.WithFollowUp(parent)))
}

// nextPage answers a listing's "Next page" click by replacing the listing
// through the payload's response_url.
func (s *Slack) nextPage(cb *slack.InteractionCallback, value string) {
	sub, cursor, _ := strings.Cut(value, " ")
	q := commandQuery{sub: sub, cursor: cursor, user: cb.User.ID, channelID: cb.Channel.ID, chanName: cb.Channel.Name}
	if q.channelID == "" {
		q.channelID = cb.Container.ChannelID
	}
	responseURL := cb.ResponseURL
	s.opts.Async.Go("list_page", func(ctx context.Context) {
		s.respond(ctx, responseURL, s.listing(ctx, q), true)
	})
}

// ephemeralReply is what the command endpoint and response_url receive.
type ephemeralReply struct {
	ResponseType    string        `json:"response_type"`
	ReplaceOriginal bool          `json:"replace_original,omitempty"`
	Text            string        `json:"text"`
	Blocks          []slack.Block `json:"blocks"`
}

func ephemeral(msg blocks.Message) ephemeralReply {
	return ephemeralReply{ResponseType: "ephemeral", Text: msg.Text, Blocks: msg.Blocks}
}

// respond POSTs a reply to a Slack response_url.
func (s *Slack) respond(ctx context.Context, responseURL string, msg blocks.Message, replace bool) {
	if responseURL == "" {
		s.log.WarnContext(ctx, "no response_url to answer through")
		return
	}
	reply := ephemeral(msg)
	reply.ReplaceOriginal = replace
	body, err := json.Marshal(reply)
	if err != nil {
		s.log.ErrorContext(ctx, "could not encode a response_url reply", "err", err)
		return
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, responseURL, bytes.NewReader(body))
	if err != nil {
		s.log.WarnContext(ctx, "bad response_url", "err", err)
		return
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := s.opts.HTTPClient.Do(req)
	if err != nil {
		s.log.WarnContext(ctx, "could not answer through response_url", "err", err)
		return
	}
	resp.Body.Close()
	if resp.StatusCode >= 300 {
		s.log.WarnContext(ctx, "response_url refused the reply", "status", resp.StatusCode)
	}
}

package slackout

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/approvalbot/approvalbot/aah"
	"github.com/approvalbot/approvalbot/jobs"
	"github.com/approvalbot/approvalbot/store"
	"github.com/slack-go/slack"
)

// poster posts request messages and keeps them in sync with the request.
type poster struct {
	opts       Options // defaulted by Handlers
	log        *slog.Logger
	pacing     store.Pacing
	channelIDs sync.Map // channel name -> the id noted for it (noteChannelID)
}

type postJob struct{ p *poster }

// Handle posts the request's message once. It finds nothing to do when the
// message already exists or the request closed before it was posted (once
// it has adopted any message an earlier attempt left in Slack unrecorded).
// Posts to a channel leave one at a time, in the order their requests
// arrived (store.TakePostTurn): until its turn comes, the job is
// rescheduled to the time it is told, as a free retry.
func (h postJob) Handle(ctx context.Context, j store.Job) (err error) {
	p := h.p
	rec, req, err := p.load(ctx, j.RequestID)
	if err != nil || req == nil {
		return err
	}
	if rec.Posted() {
		p.opts.Metrics.posts.WithLabelValues("skipped").Inc()
		return nil
	}
	turn := store.PostTurn{Channel: rec.Channel, ID: rec.ID, Arrival: arrival(j, rec)}
	if !rec.Status.Open() && grantRefs(rec, req) == nil {
		// (A request a standing approval resolved as it arrived is
		// posted: as a notice, renderMessage.) It may have queued while
		// open: it leaves, not to hold up the posts behind it.
		if err := p.opts.Store.LeavePostQueue(ctx, turn); err != nil {
			p.log.WarnContext(ctx, "could not leave the channel's queue", "request_id", rec.ID, "err", err)
		}
		return p.closedBeforeRecorded(ctx, rec)
	}
	slot, err := p.takeTurn(ctx, turn)
	if err != nil {
		return err
	}
	// The turn ends as soon as the call to Slack has (the next post's
	// slot counts from then), or when this run ends without one. An
	// attempt that certainly sent nothing stops counting (so that a retry
	// after a 429 neither looks for a message nor schedules a sweep) and,
	// failing, gives its turn back: it goes before the posts that arrived
	// after it, after any hold a 429 put on the channel.
	mayHaveSent, begun, turnEnded := false, false, false
	defer func() {
		bg := context.WithoutCancel(ctx)
		if begun && !mayHaveSent {
			if err := p.opts.Store.AbandonPost(bg, rec.ID); err != nil {
				p.log.WarnContext(ctx, "could not uncount an attempt that sent nothing", "request_id", rec.ID, "err", err)
			}
		}
		if turnEnded {
			return
		}
		var retry *jobs.RetryError
		if err != nil && mayHaveSent && answeredByError(err) && !errors.As(err, &retry) && j.Attempt <= holdPlaceRetries {
			// Slack answered with an error (a 5xx, internal_error): it
			// may have posted, and then has: the post keeps its place for
			// its first retries, seconds apart, so a blip does not let a
			// later arrival go first, and its retry finds any message
			// before posting. One that keeps failing lets the posts behind
			// it go rather than hold the channel. A call with no answer (a
			// timeout) may still be applied later: retried at once, it
			// would post again before that message could be found, so it
			// ends its turn and comes back by its arrival.
			back := time.Second << (j.Attempt - 1)
			if rerr := p.opts.Store.ReturnPostTurn(bg, turn, back); rerr != nil {
				p.log.WarnContext(ctx, "could not keep the post's place; the post queues again by its arrival", "request_id", rec.ID, "err", rerr)
			}
			err = &jobs.RetryError{After: back, Reason: err.Error()}
			return
		}
		if err == nil || mayHaveSent {
			p.endTurn(bg, turn)
			return
		}
		back := time.Duration(0)
		if errors.As(err, &retry) {
			back = retry.After
		}
		if rerr := p.opts.Store.ReturnPostTurn(bg, turn, back); rerr != nil {
			p.log.WarnContext(ctx, "could not give the turn back; the post queues again by its arrival", "request_id", rec.ID, "err", rerr)
		}
	}()
	mentions, err := p.mentions(ctx, req.Slack.Reviewers)
	if err != nil {
		return p.slackFailure(ctx, rec, "users.lookupByEmail", err)
	}
	// Nobody to mention or file the request under: no transaction.
	if members := p.members(ctx, req); len(mentions) > 0 || len(members) > 0 {
		if err := p.opts.Store.SetMentions(ctx, rec.ID, mentions, members...); err != nil {
			return err
		}
	}
	rec.Mentions = mentions
	// Only while the request is still open (unless a standing approval
	// closed it as it arrived: that notice is posted): one withdrawn since
	// it was read above is not posted, its message never shown live.
	att, err := p.opts.Store.BeginPost(ctx, rec.ID, rec.Status.Open())
	if errors.Is(err, store.ErrNotFound) {
		return nil
	} else if err != nil {
		return err
	}
	if att.Closed {
		// Its turn ends as this run does (the deferred endTurn). An
		// earlier attempt may still have reached Slack: look for it.
		rec, err := p.opts.Store.Get(ctx, rec.ID)
		if err != nil {
			return err
		}
		return p.closedBeforeRecorded(ctx, rec)
	}
	if att.Done {
		p.opts.Metrics.posts.WithLabelValues("skipped").Inc()
		return nil
	}
	begun = true
	if att.N > 1 {
		// An earlier attempt may have reached Slack without recording
		// its message (its worker died, or its call outlived the lease):
		// look for it before posting again.
		found, err := p.findPosted(ctx, rec, att.FirstAt)
		if err != nil {
			if retry := lookupFailed(ctx, p.log, err, p.opts.RateLimitHold, rec.ID, store.PostEffect); retry != nil {
				return retry
			}
			p.opts.Metrics.posts.WithLabelValues("unverified").Inc()
		} else if len(found) > 0 {
			return p.adopt(ctx, rec, found[0])
		}
	}
	msg := renderMessage(ctx, p.opts.Store, p.log, rec, req, p.opts.Defaults, p.opts.GrantMax)
	if err := sleepUntil(ctx, p.opts.Now, slot); err != nil {
		return err
	}
	mayHaveSent = true
	channel, ts, err := p.postMessage(ctx, rec.Channel, msg.Text, msg.Blocks, postMetadata(rec.ID, att.N))
	if err != nil {
		mayHaveSent = !refusedOutright(err)
		return p.slackFailure(ctx, rec, "chat.postMessage", err)
	}
	p.endTurn(context.WithoutCancel(ctx), turn)
	turnEnded = true
	p.noteChannelID(ctx, rec.Channel, channel)
	// Record the message before anything else can fail. Should this
	// process die first, the next attempt finds the message by its
	// metadata; should another attempt have recorded its own meanwhile,
	// this one is the duplicate.
	recordCtx := context.WithoutCancel(ctx)
	err = p.opts.Store.RecordPost(recordCtx, rec.ID, channel, ts, rec.Version, p.opts.Now().Add(p.opts.Lease))
	if errors.Is(err, store.ErrPostedElsewhere) {
		p.opts.Metrics.posts.WithLabelValues("duplicate").Inc()
		p.log.WarnContext(ctx, "another attempt recorded its message first; deleting this copy", "request_id", rec.ID, "ts", ts)
		return deleteCopy(recordCtx, p.opts.Slack, p.log, rec.ID, store.PostEffect, channel, ts)
	}
	if err != nil {
		p.log.ErrorContext(ctx, "message posted but not recorded; the next attempt looks for it", "request_id", rec.ID, "channel", channel, "ts", ts, "err", err)
		return err
	}
	p.opts.Metrics.posts.WithLabelValues("posted").Inc()
	// Debug: one line per post would cost more than the post's own
	// bookkeeping under load; the posts metric counts them.
	p.log.DebugContext(ctx, "request posted to Slack", "request_id", rec.ID, "channel", channel, "ts", ts)
	return p.permalink(ctx, rec.ID, channel, ts)
}

// holdPlaceRetries is how many failed attempts at a post that Slack
// answered with an error keep its place in its channel's queue: retried 1,
// 2 and 4 s later, ahead of the posts that arrived after it (about 7 s of a
// Slack blip); a failure after that ends its turn, and a later arrival may
// go first.
const holdPlaceRetries = 3

// answeredByError reports whether Slack answered the call, with an error
// (an HTTP error status, or ok: false), rather than not at all. A 502 or
// 504 is a proxy's answer that it got none from Slack, which may still
// apply the call: not an answer.
func answeredByError(err error) bool {
	var status slack.StatusCodeError
	var apiErr slack.SlackErrorResponse
	switch {
	case errors.As(err, &status):
		return status.Code != http.StatusBadGateway && status.Code != http.StatusGatewayTimeout
	case errors.As(err, &apiErr):
		return true
	}
	return false
}

// closedBeforeRecorded handles the post of a request that closed (resolved,
// expired, withdrawn) before any message was recorded: nothing is to be
// posted. But an earlier attempt may have reached Slack with its answer
// lost or its worker dead, and reviewers see that message: one may even
// have closed the request from it. Left unrecorded, it would show the
// request open, with live buttons, for good; so it is looked for as a retry
// of an open request looks, and adopted: recording it schedules the sync
// that shows the request closed (and the sweep, if attempts overlapped).
func (p *poster) closedBeforeRecorded(ctx context.Context, rec store.Record) error {
	if rec.Slack.Attempts == 0 {
		p.opts.Metrics.posts.WithLabelValues("skipped").Inc()
		return nil
	}
	found, err := p.findPosted(ctx, rec, rec.Slack.FirstAttemptAt)
	if err != nil {
		code, retry := classifySlack(err, p.opts.RateLimitHold, isPermanent)
		if retry != nil && !errors.Is(err, errLookupTooLong) && !errors.Is(err, errChannelUnknown) {
			p.log.WarnContext(ctx, "could not look for an earlier attempt's message of a closed request; retrying",
				"request_id", rec.ID, "err", err)
			return retry
		}
		p.log.ErrorContext(ctx, "cannot look for an earlier attempt's message of a closed request: "+
			"if one reached Slack, it still shows the request open", "request_id", rec.ID, "slack_error", cmp.Or(code, err.Error()))
		p.opts.Metrics.posts.WithLabelValues("skipped").Inc()
		return nil
	}
	if len(found) == 0 {
		p.opts.Metrics.posts.WithLabelValues("skipped").Inc()
		return nil
	}
	return p.adopt(ctx, rec, found[0])
}

// permalink fetches and stores the message's permalink, best effort.
func (p *poster) permalink(ctx context.Context, id, channel, ts string) error {
	link, err := p.opts.Slack.GetPermalinkContext(ctx, &slack.PermalinkParameters{Channel: channel, Ts: ts})
	if err != nil {
		p.log.WarnContext(ctx, "could not fetch the message permalink", "request_id", id, "err", err)
		return nil
	}
	if err := p.opts.Store.SetPermalink(ctx, id, channel, ts, link); err != nil {
		p.log.WarnContext(ctx, "could not store the message permalink", "request_id", id, "err", err)
	}
	return nil
}

// findPosted looks for the messages earlier attempts posted for rec.
// History is read by channel id: a channel configured by name is looked up
// by the id Slack reported for it before (errChannelUnknown when none did).
func (p *poster) findPosted(ctx context.Context, rec store.Record, firstAt time.Time) ([]string, error) {
	channel, err := p.channelID(ctx, rec.Channel)
	if err != nil {
		return nil, err
	}
	if channel == "" {
		return nil, errChannelUnknown
	}
	return findSent(ctx, p.opts.Slack, channel, "", firstAt, rec.ID, store.PostEffect)
}

// channelID is the id of a configured channel: as given when it is an id,
// else the id a post to it reported ("" when none did yet).
func (p *poster) channelID(ctx context.Context, channel string) (string, error) {
	if aah.IsSlackChannelID(channel) {
		return channel, nil
	}
	return p.opts.Store.ChannelID(ctx, channel)
}

// adopt records a message an earlier attempt posted, as found in the
// channel. It shows an older state: recorded as version 0, a sync job
// brings it up to date. It records even when the lookup used up the
// attempt's deadline, as a sent message is recorded: a retry would only
// look it up again, and fail the same way on a slow Slack until the job
// gave up with the message unrecorded. Redis's own timeouts bound it.
func (p *poster) adopt(ctx context.Context, rec store.Record, ts string) error {
	recordCtx := context.WithoutCancel(ctx)
	channel, err := p.channelID(recordCtx, rec.Channel)
	if err != nil {
		return err
	}
	err = p.opts.Store.RecordPost(recordCtx, rec.ID, channel, ts, 0, p.opts.Now().Add(p.opts.Lease))
	if err != nil && !errors.Is(err, store.ErrPostedElsewhere) && !errors.Is(err, store.ErrNotFound) {
		return err
	}
	p.opts.Metrics.posts.WithLabelValues("adopted").Inc()
	p.log.InfoContext(ctx, "found the message an earlier attempt posted; not posting again", "request_id", rec.ID, "ts", ts)
	return p.permalink(ctx, rec.ID, channel, ts)
}

// GaveUp records that the message will never be posted, so GET shows why,
// and takes the post out of its channel's queue.
func (h postJob) GaveUp(ctx context.Context, j store.Job, cause error) {
	h.p.opts.Metrics.posts.WithLabelValues("failed").Inc()
	if rec, err := h.p.opts.Store.Get(ctx, j.RequestID); err == nil {
		if err := h.p.opts.Store.LeavePostQueue(ctx, store.PostTurn{Channel: rec.Channel, ID: rec.ID}); err != nil {
			h.p.log.WarnContext(ctx, "could not leave the channel's queue", "request_id", j.RequestID, "err", err)
		}
	}
	if err := h.p.opts.Store.RecordPostError(ctx, j.RequestID, "gave up after "+fmt.Sprint(j.Attempt)+" attempts: "+cause.Error(), true); err != nil {
		h.p.log.ErrorContext(ctx, "could not record the post failure", "request_id", j.RequestID, "err", err)
	}
}

// load reads a request and its parsed document (parsed once per version
// and process: a post waiting for its turn comes back, and the sync
// follows it). A nil request with a
// nil error means there is nothing to do (the request is gone).
func (p *poster) load(ctx context.Context, id string) (store.Record, *aah.Request, error) {
	rec, req, err := p.opts.Store.LoadShared(ctx, id)
	switch {
	case errors.Is(err, store.ErrNotFound):
		p.log.WarnContext(ctx, "job for a request that no longer exists", "request_id", id)
		return store.Record{}, nil, nil
	case errors.Is(err, store.ErrInvalidDocument):
		// Intake validated it; only a bug or a hand-edited record gets here.
		p.log.ErrorContext(ctx, "stored request no longer parses", "request_id", id, "err", err)
		_ = p.opts.Store.RecordPostError(ctx, id, "stored request is invalid: "+err.Error(), true)
		return store.Record{}, nil, nil
	case err != nil:
		return store.Record{}, nil, err
	}
	return rec, req, nil
}

// members resolves the people a request's reviewer groups and roles name
// (groups to their members, emails to users), so the request is filed under
// them for "/approvals mine" and the Home tab. It is a convenience, not the
// authorization (that is checked at every click): a failed lookup is logged
// and skipped rather than holding the post.
func (p *poster) members(ctx context.Context, req *aah.Request) []string {
	var out []string
	entries := slices.Clone(req.Slack.ReviewerGroups)
	for _, role := range req.Slack.RequiredRoles {
		entries = append(entries, role.Members...)
	}
	for _, e := range entries {
		switch {
		case aah.IsSlackUserID(e):
			out = append(out, e)
		case p.opts.Directory == nil:
		case aah.IsSlackGroupID(e):
			users, err := p.opts.Directory.GroupMembers(ctx, e)
			if err != nil {
				p.log.WarnContext(ctx, "user group not resolved; its members will not see the request in their lists",
					"request_id", req.Artifact.ID, "group", e, "err", err)
				continue
			}
			out = append(out, users...)
		case aah.IsEmail(e):
			id, err := p.opts.Directory.UserIDByEmail(ctx, e)
			if err != nil {
				p.log.WarnContext(ctx, "role member's email not resolved", "request_id", req.Artifact.ID, "err", err)
				continue
			}
			if id != "" {
				out = append(out, id)
			}
		}
	}
	return out
}

// mentions resolves reviewers to mention syntax. Emails Slack does not know
// (or cannot look up) are shown as plain text rather than blocking the post.
func (p *poster) mentions(ctx context.Context, reviewers []string) ([]string, error) {
	out := make([]string, 0, len(reviewers))
	for _, r := range reviewers {
		if aah.IsSlackUserID(r) {
			out = append(out, "<@"+r+">")
			continue
		}
		u, err := p.opts.Slack.GetUserByEmailContext(ctx, r)
		var apiErr slack.SlackErrorResponse
		switch {
		case err == nil:
			out = append(out, "<@"+u.ID+">")
		case errors.As(err, &apiErr):
			p.log.WarnContext(ctx, "reviewer email not resolved; mentioned as text", "slack_error", apiErr.Err)
			out = append(out, r)
		default:
			return nil, err
		}
	}
	return out, nil
}

// postMessage posts text and blocks to channel through Options.Chat when
// set, else through Slack.
func (p *poster) postMessage(ctx context.Context, channel, text string, blocks []slack.Block, opts ...slack.MsgOption) (string, string, error) {
	if p.opts.Chat != nil {
		return p.opts.Chat.postMessage(ctx, channel, text, blocks, opts...)
	}
	return p.opts.Slack.PostMessageContext(ctx, channel,
		append([]slack.MsgOption{slack.MsgOptionText(text, false), slack.MsgOptionBlocks(blocks...)}, opts...)...)
}

package slackout

import (
	"context"
	"encoding/json"
	"strings"

	"github.com/approvalbot/approvalbot/aah"
	"github.com/approvalbot/approvalbot/approval"
	"github.com/approvalbot/approvalbot/blocks"
	"github.com/approvalbot/approvalbot/store"
	"github.com/slack-go/slack"
)

// requesterEffect names the DM telling a requester how their request
// ended: "notify:requester:<user id>".
func requesterEffect(user string) string { return store.JobNotify + ":requester:" + user }

// isNotifyEffect reports whether effect is a requester's DM: it is sent
// final, so the copies job neither adopts nor rewrites it.
func isNotifyEffect(effect string) bool { return strings.HasPrefix(effect, store.JobNotify+":") }

// notifyJob runs "notify:<id>" jobs, which the store schedules in the
// transaction that closes a request (store.Options.NotifyJobs): the human
// on whose behalf the agent asked (aah.Request.Requester: the first of
// extensions.slack.requested_by and a "human:<user id or email>"
// source.agent_id) gets one DM saying how it ended, with the decisions'
// final values and a link to the request's message. The DM is a copy
// effect sent through sendCopy, so a retry, a crash after Slack took the
// message, or a second replica never sends it twice: a later attempt finds
// and adopts it. A request without a requester gets nothing; a requester
// who cannot be resolved (an unknown email, no directory) or DM'd (Slack
// refuses for good) is logged and audited once ("requester_notify_failed"),
// recorded in the copy's place so no attempt tries again.
type notifyJob struct{ timerDeps }

func (h notifyJob) Handle(ctx context.Context, j store.Job) error {
	rec, req, err := loadTimed(ctx, h.store, j.RequestID, h.log)
	if err != nil || req == nil || rec.Status.Open() {
		return err
	}
	who := req.Requester()
	if len(who) == 0 {
		return nil
	}
	requester := who[0]
	target, reason, err := approval.ResolveTarget(ctx, h.dir, requester)
	if err != nil {
		code, retry := classifySlack(err, h.rateLimitHold, refusedForTimers)
		if retry != nil {
			h.log.WarnContext(ctx, "requester not resolved yet; retrying", "request_id", rec.ID, "requester", requester, "err", err)
			return retry
		}
		reason = approval.LookupReason(requester, code)
	}
	if reason == "" && (target.Channel != "" || len(target.Users) != 1) {
		reason = "not a Slack user id or email"
	}
	if reason != "" {
		return h.failed(ctx, rec.ID, requesterEffect(requester), requester, reason)
	}
	user := target.Users[0]
	effect := requesterEffect(user)
	msg := blocks.RequesterNotice(notice(req, rec))
	err = h.sendCopy(ctx, rec, effect, destination{user: user}, slack.MsgOptionText(msg.Text, false), slack.MsgOptionBlocks(msg.Blocks...))
	if err != nil {
		code, retry := classifySlack(err, h.rateLimitHold, refusedForTimers)
		if retry != nil {
			h.log.WarnContext(ctx, "requester not told yet; retrying", "request_id", rec.ID, "requester", user, "err", err)
			return retry
		}
		return h.failed(ctx, rec.ID, effect, requester, "Slack refused the message: "+code)
	}
	return nil
}

// failed gives up telling the requester: the failure is recorded in the
// copy's place (fenced: only the first attempt to record it audits it).
func (h notifyJob) failed(ctx context.Context, id, effect, requester, reason string) error {
	ctx = context.WithoutCancel(ctx)
	_, won, err := h.store.RecordCopy(ctx, id, store.Copy{Effect: effect, Final: true, Failed: reason}, h.now().Add(h.lease))
	if err != nil || !won {
		return err
	}
	h.log.WarnContext(ctx, "the requester cannot be told how their request ended", "request_id", id,
		"requester", requester, "reason", reason)
	return h.core.Audit(ctx, id, store.AuditEvent{Event: "requester_notify_failed", Actor: "system",
		Data: map[string]any{"requester": requester, "reason": reason}})
}

func (h notifyJob) GaveUp(ctx context.Context, j store.Job, err error) {
	h.log.ErrorContext(ctx, "gave up telling the requester how their request ended", "request_id", j.RequestID, "err", err)
}

// notice is what the requester is told about the closed request rec.
func notice(req *aah.Request, rec store.Record) blocks.Outcome {
	n := blocks.Outcome{Title: req.Artifact.Title, Status: rec.Status, ResolvedBy: rec.ResolvedBy,
		OnDeadline: req.OnDeadline, Permalink: rec.Slack.Permalink, Directive: rec.Directive}
	if len(rec.Response) > 0 {
		var resp aah.Response
		if json.Unmarshal(rec.Response, &resp) == nil {
			n.Summary = resp.Content.Body.Data.Summary
		}
	}
	return n
}

package handlers

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/approvalbot/approvalbot/aah"
	"github.com/approvalbot/approvalbot/approval"
	"github.com/approvalbot/approvalbot/blocks"
	"github.com/approvalbot/approvalbot/store"
	"github.com/slack-go/slack"
)

// Grants are the standing-approval operations ("Approve similar…",
// Revoke, /approvals grants); *approval.Core implements them.
type Grants interface {
	Grant(ctx context.Context, requestID, decisionID string, by aah.Person, d time.Duration, comment string) (approval.Outcome, store.Grant, error)
	RevokeGrant(ctx context.Context, grantID string, by aah.Person) (store.Grant, error)
	Grants(ctx context.Context, agent string) ([]store.Grant, error)
	// GrantMax is the longest grant; 0 when standing approvals are off.
	GrantMax() time.Duration
}

// openGrantModal opens "Approve similar…" of an approval decision: the
// duration and comment modal. A person who may not approve it, a decision
// naming no action, or standing approvals being off is told so instead.
func (s *Slack) openGrantModal(ctx context.Context, triggerID, requestID, decisionID, channel string, by aah.Person) {
	const action = blocks.ActionApproveSimilar
	if s.opts.Grants == nil || s.opts.Grants.GrantMax() <= 0 {
		s.settled(ctx, action, channel, by, approval.Outcome{}, &approval.Refusal{Reason: "Standing approvals are off in this workspace."})
		return
	}
	rec, req, err := s.opts.Requests.Load(ctx, requestID)
	if err == nil && !rec.Status.Open() {
		err = &approval.Refusal{Reason: "This request can no longer be answered (it is " + string(rec.Status) + ")."}
	}
	var d aah.Decision
	if err == nil {
		var ok bool
		if d, ok = req.Decision(decisionID); !ok || d.ActionKey() == "" {
			err = &approval.Refusal{Reason: "This decision names no kind of action to approve similar requests by."}
		}
	}
	if err == nil {
		err = s.opts.Decisions.Check(ctx, requestID, by, "answer")
	}
	if err != nil {
		s.settled(ctx, action, channel, by, approval.Outcome{}, err)
		return
	}
	ref := blocks.ModalRef{RequestID: requestID, DecisionID: decisionID, Channel: channel}
	view := blocks.GrantModal(req, d, rec.Agent, d.ActionKey(), s.opts.Grants.GrantMax(), ref)
	s.opts.Async.Go("views.open", func(ctx context.Context) {
		if _, err := s.opts.Slack.OpenViewContext(ctx, triggerID, view); err != nil {
			s.log.WarnContext(ctx, "could not open a modal", "action", action, "request_id", requestID, "err", err)
			s.tellUser(channel, by.ID, ":warning: The dialog could not be opened; please click again.")
		}
	})
}

// grantSubmission approves the decision and grants the standing approval
// (ModalGrant); a refusal stays on the modal's field.
func (s *Slack) grantSubmission(ctx context.Context, ref blocks.ModalRef, by aah.Person, values map[string]map[string]slack.BlockAction) *viewErrors {
	if s.opts.Grants == nil {
		return fieldErrors(blocks.BlockDuration, "Standing approvals are off in this workspace.")
	}
	picked := values[blocks.BlockDuration][blocks.ActionDuration].SelectedOption.Value
	d, err := time.ParseDuration(picked)
	if picked == "" || err != nil {
		return fieldErrors(blocks.BlockDuration, "Choose for how long to approve similar requests.")
	}
	out, g, err := s.opts.Grants.Grant(ctx, ref.RequestID, ref.DecisionID, by, d, values[blocks.BlockComment][blocks.ActionText].Value)
	var refusal *approval.Refusal
	if err != nil && out.Changed && !errors.As(err, &refusal) {
		// The approval is recorded; only the grant failed. Submitting again
		// would find the request resolved: close the modal and say so.
		s.settled(ctx, "grant", ref.Channel, by, out, nil)
		s.log.ErrorContext(ctx, "approved, but the standing approval could not be created", "request_id", ref.RequestID, "err", err)
		s.tellUser(ref.Channel, by.ID, ":warning: Approved, but the standing approval could not be created: "+
			"similar requests still come to reviewers.")
		return nil
	}
	if errs := s.reply(ctx, blocks.BlockDuration, "grant", ref, by, out, err); errs != nil {
		return errs
	}
	s.tellUser(ref.Channel, by.ID, fmt.Sprintf(":white_check_mark: Approved. Agent `%s`'s `%s` requests are approved at once "+
		"until <!date^%d^{date_short_pretty} at {time}|%s>; revoke it from `%s grants`.", blocks.Escape(g.Agent),
		blocks.Escape(g.ActionKey), g.ExpiresAt.Unix(), g.ExpiresAt.UTC().Format(time.RFC3339), blocks.Escape(s.opts.Command)))
	return nil
}

// revokeGrantClick revokes a standing approval from its Revoke button (the
// grant notice, or the /approvals grants listing, which is then redrawn).
// Only its granter or an admin may; others are told why.
func (s *Slack) revokeGrantClick(ctx context.Context, cb *slack.InteractionCallback, channel string, by aah.Person, grantID string) {
	const action = blocks.ActionRevokeGrant
	if s.opts.Grants == nil {
		return
	}
	g, err := s.opts.Grants.RevokeGrant(ctx, grantID, by)
	var refusal *approval.Refusal
	switch {
	case errors.As(err, &refusal):
		s.metrics.actions.WithLabelValues(action, "refused").Inc()
		s.tellUser(channel, by.ID, ":no_entry: "+refusal.Reason)
		return
	case errors.Is(err, store.ErrGrantNotFound):
		s.metrics.actions.WithLabelValues(action, "refused").Inc()
		s.tellUser(channel, by.ID, ":grey_question: This standing approval expired or no longer exists.")
		return
	case err != nil:
		s.settled(ctx, action, channel, by, approval.Outcome{}, err)
		return
	}
	if g.RevokedBy != nil && g.RevokedBy.ID != by.ID {
		s.metrics.actions.WithLabelValues(action, "unchanged").Inc()
		s.tellUser(channel, by.ID, fmt.Sprintf(":information_source: <@%s> revoked this standing approval already.", g.RevokedBy.ID))
		return
	}
	s.metrics.actions.WithLabelValues(action, "recorded").Inc()
	s.log.InfoContext(ctx, "standing approval revoked", "grant_id", g.ID, "user", by.ID)
	if cb.Container.IsEphemeral && cb.ResponseURL != "" {
		responseURL := cb.ResponseURL
		s.opts.Async.Go("grants_list", func(ctx context.Context) {
			s.respond(ctx, responseURL, s.grantList(ctx), true)
		})
	}
	s.tellUser(channel, by.ID, fmt.Sprintf(":white_check_mark: Revoked: agent `%s`'s `%s` requests come to reviewers again.",
		blocks.Escape(g.Agent), blocks.Escape(g.ActionKey)))
}

// grantList answers /approvals grants: every live standing approval.
func (s *Slack) grantList(ctx context.Context) blocks.Message {
	if s.opts.Grants == nil || s.opts.Grants.GrantMax() <= 0 {
		return blocks.Notice("Standing approvals are off in this workspace (STANDING_APPROVAL_MAX=0).")
	}
	list, err := s.opts.Grants.Grants(ctx, "")
	if err != nil {
		s.log.ErrorContext(ctx, "slash command grants failed", "err", err)
		return blocks.Notice(":warning: The standing approvals could not be loaded; please try again.")
	}
	refs := make([]aah.GrantRef, len(list))
	comments := map[string]string{}
	for i, g := range list {
		refs[i] = g.Ref()
		comments[g.ID] = g.Comment
	}
	return blocks.GrantList(refs, comments)
}

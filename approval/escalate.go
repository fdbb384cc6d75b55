package approval

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/approvalbot/approvalbot/aah"
	"github.com/approvalbot/approvalbot/store"
)

// Target is whom an escalation step reaches: Slack users, or a channel (an
// id or "#name").
type Target struct {
	Users   []string
	Channel string
}

// Recipients are the users, or the channel, the step's copies go to.
func (t Target) Recipients() []string {
	if t.Channel != "" {
		return []string{t.Channel}
	}
	return t.Users
}

// ResolveTarget turns an escalation step's target (data.escalation[].to)
// into Slack users or a channel, by aah's forms of users, groups and
// channels, looking groups and emails up in dir (the cached directory
// authorization reads). A target that can never resolve gives a reason; a
// failed lookup gives the error, for the caller to retry or, when it is
// for good, to word with LookupReason.
func ResolveTarget(ctx context.Context, dir Directory, to string) (t Target, reason string, err error) {
	to = strings.TrimSpace(to)
	switch {
	case aah.IsSlackUserID(to):
		return Target{Users: []string{to}}, "", nil
	case aah.IsSlackChannelID(to), aah.IsSlackChannelName(to):
		return Target{Channel: to}, "", nil
	case dir == nil && (aah.IsSlackGroupID(to) || aah.IsEmail(to)):
		return Target{}, "there is no directory to look it up in", nil
	case aah.IsSlackGroupID(to):
		members, err := dir.GroupMembers(ctx, to)
		if err != nil {
			return Target{}, "", fmt.Errorf("look up members of user group %s: %w", to, err)
		}
		if len(members) == 0 {
			return Target{}, "the user group has no members", nil
		}
		return Target{Users: members}, "", nil
	case aah.IsEmail(to):
		id, err := dir.UserIDByEmail(ctx, strings.ToLower(to))
		if err != nil {
			return Target{}, "", fmt.Errorf("look up the Slack user of an email: %w", err)
		}
		if id == "" {
			return Target{}, "no Slack user has this email (users_not_found)", nil
		}
		return Target{Users: []string{id}}, "", nil
	}
	return Target{}, "not a Slack user id, email, user group or channel", nil
}

// LookupReason words a lookup of to that Slack refused for good (its error
// code) as the reason the step cannot resolve.
func LookupReason(to, code string) string {
	switch {
	case aah.IsSlackGroupID(strings.TrimSpace(to)):
		return "the user group could not be read (" + code + ")"
	case code == "users_not_found" || code == "user_not_found":
		return "no Slack user has this email (" + code + ")"
	}
	return "the email could not be looked up (" + code + ")"
}

// Escalate applies step k of the request's data.escalation, whose target
// resolved to t: in one audited update the request becomes escalated, the
// target's users may answer it like its reviewers (and find it in their
// lists), and its message says so. A closed request, or a step applied (or
// given up on) before, is left as it is: each step applies once. The
// outcome's Changed says whether this call applied it.
func (c *Core) Escalate(ctx context.Context, id string, k int, t Target) (Outcome, error) {
	return c.step(ctx, id, k, func(req *aah.Request) *store.Change {
		esc := &store.Escalation{Step: k, At: c.now().UTC()}
		ch := &store.Change{Status: aah.StatusEscalated, Bump: true, Escalation: esc,
			Audit: []store.AuditEvent{{Event: "escalated", Actor: "system",
				Data: map[string]any{"step": k, "to": req.Data.Escalation[k].To, "targets": t.Recipients()}}}}
		if t.Channel != "" {
			esc.Channels = []string{t.Channel}
		} else {
			esc.To = t.Users
			ch.AddReviewers = t.Users // the targets find it in "/approvals mine"
		}
		return ch
	})
}

// EscalationFailed records that step k's target cannot be resolved (reason
// says why): the request shows it (escalation error) and the audit
// records it; the request stays with its reviewers, answerable as before.
// Like Escalate, it applies once per step.
func (c *Core) EscalationFailed(ctx context.Context, id string, k int, reason string) (Outcome, error) {
	return c.step(ctx, id, k, func(req *aah.Request) *store.Change {
		to := req.Data.Escalation[k].To
		return &store.Change{
			Escalation: &store.Escalation{Step: k, Problem: fmt.Sprintf("step %d (%s): %s", k, to, reason)},
			Audit: []store.AuditEvent{{Event: "escalation_failed", Actor: "system",
				Data: map[string]any{"step": k, "to": to, "reason": reason}}},
		}
	})
}

// step records step k of the request's escalation with the change apply
// makes of it, unless the request is closed, lacks the step or has
// recorded it: each step is recorded once.
func (c *Core) step(ctx context.Context, id string, k int, apply func(req *aah.Request) *store.Change) (Outcome, error) {
	var out Outcome
	rec, err := c.update(ctx, id, func(rec store.Record) (*store.Change, error) {
		out = Outcome{}
		req, err := c.escalatable(rec, k)
		if req == nil || err != nil {
			return nil, err
		}
		out.Changed = true
		return apply(req), nil
	})
	out.Record = rec
	return out, err
}

// escalatable is the request when step k may still be applied to it: it is
// open, has the step, and has not applied it; nil otherwise.
func (c *Core) escalatable(rec store.Record, k int) (*aah.Request, error) {
	if !rec.Status.Open() || slices.Contains(rec.EscalatedSteps, k) {
		return nil, nil
	}
	req, err := rec.Request()
	if err != nil {
		return nil, err
	}
	if k < 0 || k >= len(req.Data.Escalation) {
		return nil, nil
	}
	return req, nil
}

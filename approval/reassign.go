package approval

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/approvalbot/approvalbot/aah"
	"github.com/approvalbot/approvalbot/store"
)

// Reassign escalates the request by hand (the "escalate" verb): a person
// who may decide it hands it to a Slack user, user group, channel or email
// (the forms of a data.escalation step, resolved by ResolveTarget through
// the same directory), with an optional note. Like a timed step, in one
// audited update the request becomes escalated, the target's users may
// answer it (and find it in their lists), and its message says so; the
// target's copies (a DM to each user, or a post in the channel) are sent by
// the escalation job under the hand-made step's key (store.ManualStep), so
// each is sent once however often the job retries. Record.Reassignments
// gets the entry; the audit records escalated with "manual": true.
//
// The request must accept escalate (one of its decisions lists it in its
// responses) and the person must be allowed to decide it: that is checked
// (and a refusal audited) before the target is resolved. Escalating to yourself, or to a target that cannot resolve,
// is refused with the reason. The same person repeating the same
// escalation changes nothing.
func (c *Core) Reassign(ctx context.Context, requestID string, by aah.Person, to, note string) (Outcome, error) {
	to, note = strings.TrimSpace(to), strings.TrimSpace(note)
	switch {
	case to == "":
		return Outcome{}, &Refusal{Reason: "Say whom to escalate it to: a person, a user group, a channel or an email.",
			Field: FieldTo, Rule: RuleInvalid}
	case utf8.RuneCountInString(note) > aah.MaxTextLength:
		return Outcome{}, &Refusal{Reason: fmt.Sprintf("A note holds at most %d characters.", aah.MaxTextLength), Field: FieldNote, Rule: RuleInvalid}
	}
	// Who may escalate is checked before the target is looked up, and a
	// refusal is audited: a person who may not decide the request learns
	// nothing about the target (whether an email or a group resolves).
	if err := c.CheckVerb(ctx, requestID, "", by, aah.VerbEscalate); err != nil {
		return Outcome{}, err
	}
	lookup, cancel := context.WithTimeout(ctx, authorizeBudget)
	t, reason, err := ResolveTarget(lookup, c.dir, to)
	cancel()
	if err != nil {
		return Outcome{}, fmt.Errorf("resolve the escalation target of %s: %w", requestID, err)
	}
	if reason != "" {
		return Outcome{}, &Refusal{Reason: fmt.Sprintf("%s cannot be escalated to: %s.", to, reason), Field: FieldTo, Rule: RuleInvalid}
	}
	if slices.Equal(t.Users, []string{by.ID}) {
		return Outcome{}, &Refusal{Reason: "You cannot escalate a request to yourself: name someone else.", Field: FieldTo, Rule: RuleInvalid}
	}
	lookup, cancel = context.WithTimeout(ctx, authorizeBudget)
	onlyRequester, err := c.onlyRequester(lookup, requestID, t)
	cancel()
	if err != nil {
		return Outcome{}, fmt.Errorf("check the escalation target of %s: %w", requestID, err)
	}
	return c.act(ctx, requestID, by, string(aah.VerbEscalate), func(rec store.Record, req *aah.Request, g grant, out *Outcome) (*store.Change, error) {
		if err := offered(req, aah.VerbEscalate); err != nil {
			return nil, err
		}
		if err := g.mayDecide(); err != nil {
			return nil, err
		}
		if onlyRequester && !g.rules.AllowSelfApproval {
			return nil, &Refusal{Reason: fmt.Sprintf("%s asked for this decision, so they cannot make it (self-approval is off): "+
				"name someone else.", to), Field: FieldTo, Rule: RuleInvalid}
		}
		if slices.ContainsFunc(rec.Reassignments, func(r aah.Reassignment) bool {
			return r.By.ID == by.ID && r.To == to && r.Note == note
		}) {
			// A double click or a retried submission, even one arriving
			// after someone else escalated: no second step, no second copy.
			return nil, nil
		}
		out.Changed = true
		return c.reassignment(rec, by, to, note, t), nil
	})
}

// onlyRequester reports whether every user t reaches is the request's
// requester: an escalation to them hands it to nobody who may decide it
// unless self-approval is allowed (a channel is not checked).
func (c *Core) onlyRequester(ctx context.Context, requestID string, t Target) (bool, error) {
	if len(t.Users) == 0 {
		return false, nil
	}
	rec, err := c.store.Get(ctx, requestID)
	if err != nil {
		return false, err
	}
	req, err := rec.Request()
	if err != nil {
		return false, err
	}
	for _, u := range t.Users {
		is, err := (&matcher{dir: c.dir, user: u}).any(ctx, req.Requester())
		if err != nil || !is {
			return false, err
		}
	}
	return true, nil
}

// reassignment is the change of a hand-made escalation to t: the
// escalation's targets under the next hand-made step, its entry, and the
// job that sends the target its copies now.
func (c *Core) reassignment(rec store.Record, by aah.Person, to, note string, t Target) *store.Change {
	now := c.now().UTC()
	step := store.ManualStep(len(rec.Reassignments))
	esc := &store.Escalation{Step: step, Manual: true, At: now}
	data := map[string]any{"by": by.ID, "to": to, "targets": t.Recipients(), "manual": true, "step": step}
	if note != "" {
		data["note"] = note
	}
	ch := &store.Change{Status: aah.StatusEscalated, Bump: true, Escalation: esc,
		Reassignment: &aah.Reassignment{By: by, To: to, At: now, Note: note},
		Audit:        []store.AuditEvent{{Event: "escalated", Actor: by.AgentID(), Data: data}}}
	if t.Channel != "" {
		esc.Channels = []string{t.Channel}
	} else {
		esc.To = t.Users
		ch.AddReviewers = t.Users // the targets find it in "/approvals mine"
	}
	if c.timerKinds == nil || c.timerKinds[store.JobEscalate] {
		// A timer: closing the request cancels copies nobody needs.
		ch.Timers = []store.JobAt{{ID: store.TimerID(store.JobEscalate, rec.ID, step), At: now}}
	}
	return ch
}

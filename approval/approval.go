package approval

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/approvalbot/approvalbot/aah"
	"github.com/approvalbot/approvalbot/store"
)

// Storage is what the core needs of the store: create a request, read it,
// and change it in one optimistic transaction. *store.Store implements it; the
// core's tests use a fake in memory (store.Change.Apply).
type Storage interface {
	// Create stores a new request with its post job and timers, atomically;
	// created is false for an identical resubmission, store.ErrConflict for
	// a different body under a stored id.
	Create(ctx context.Context, n store.NewRequest) (rec store.Record, created bool, err error)
	Get(ctx context.Context, id string) (store.Record, error)
	// Update reads the request, lets decide say what changes, and writes
	// the change atomically, running decide again when the request (or its
	// audit chain) changed meanwhile. decide may return (nil, nil) for
	// "nothing to do"; its errors are returned as they are.
	Update(ctx context.Context, id string, decide func(store.Record) (*store.Change, error)) (store.Record, error)
}

// Core owns the request lifecycle. Every transition is one atomic
// Storage.Update: the answer, the status, the audit entries and, on
// resolution, the response artifact and its delivery are written together
// or not at all, so double clicks, Slack retries, concurrent reviewers and
// timers firing twice can neither close a request twice nor lose an answer.
type Core struct {
	store  Storage
	now    func() time.Time
	dir    Directory
	policy Policy
	// reminders and timerKinds decide a new request's timers (Timers).
	reminders  aah.ReminderPlan
	timerKinds map[string]bool
	metrics    *Metrics
	grants     StandingApprovals
}

// Options configure a Core.
type Options struct {
	// Now is the clock; default time.Now. It should be the store's.
	Now func() time.Time
	// Directory looks up users' emails and user group members. Without it,
	// reviewers given by email or group match nobody (beyond the mentions
	// resolved when the message was posted).
	Directory Directory
	// Policy is the workspace-wide authorization configuration.
	Policy Policy
	// Reminders is the reminder schedule of requests that set none
	// (extensions.slack.reminders); Max 0 sends none.
	Reminders aah.ReminderPlan
	// TimerKinds are the timer job kinds the job runner handles
	// (store.JobExpire, JobEscalate, JobRemind): new requests get only those.
	TimerKinds map[string]bool
	// Metrics measure decisions (first answers, closes); nil measures
	// nothing.
	Metrics *Metrics
	// Grants are the standing approvals (grants.go); the zero value has none.
	Grants StandingApprovals
}

// New returns the core over st.
func New(st Storage, opts Options) *Core {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Core{store: st, now: opts.Now, dir: opts.Directory, policy: opts.Policy,
		reminders: opts.Reminders, timerKinds: opts.TimerKinds, metrics: opts.Metrics, grants: opts.Grants}
}

// update is Storage.Update, measured: what the decide run that committed
// changed (a first answer, a close) is observed once the commit succeeded.
// Only the process whose transaction committed a change observes it, and a
// change commits once (a replica or retry that lost the race decides again
// on the changed request and finds nothing to do, or is refused), so each
// transition is counted once however many replicas, timers or clicks race
// for it. A commit whose result never arrived (store.ErrOutcomeUnknown) is
// not observed: the metrics may miss a transition, never count one twice.
func (c *Core) update(ctx context.Context, id string, decide func(store.Record) (*store.Change, error)) (store.Record, error) {
	var t transition
	rec, err := c.store.Update(ctx, id, func(rec store.Record) (*store.Change, error) {
		t = transition{}
		ch, err := decide(rec)
		if err == nil && ch != nil {
			t = transitionOf(rec, ch)
		}
		return ch, err
	})
	if err == nil {
		c.metrics.observe(t)
	}
	return rec, err
}

// Refusal is an action that changed nothing, with the reason to show the
// person (an ephemeral message or a modal error). It is audited.
type Refusal struct {
	Reason string
	// Field is the modal field the reason belongs to, if any ("comment",
	// "value").
	Field string
	// Rule names the rule that refused it (Rule… constants), for the audit.
	Rule string
}

func (r *Refusal) Error() string { return r.Reason }

// Refusal fields beyond the modal's: the decision named is not one of the
// request's (FieldDecision), or Submit found required decisions still
// unanswered (FieldRequired). The decision API answers them 404 and 409.
const (
	FieldDecision = "decision_id"
	FieldRequired = "required"
)

// Refusal fields of the reviewer verbs: the picked reject reason, a
// directive's text, an escalation's target and note. A modify's edited
// parameter is FieldParam + its name.
const (
	FieldRejectReason = "reject_reason"
	FieldText         = "text"
	FieldTo           = "to"
	FieldNote         = "note"
	FieldParam        = "param:"
	// FieldComment is Submit's overall comment.
	FieldComment = "comment"
)

// Outcome is the result of an accepted action.
type Outcome struct {
	Record   store.Record
	Resolved bool // this action resolved the request
	Changed  bool // false when the action repeated the current state (a double click)
}

// decideFunc says what a reviewer's action changes on an open request the
// person may act on; a *Refusal refuses it.
type decideFunc func(rec store.Record, req *aah.Request, g grant, out *Outcome) (*store.Change, error)

// act runs one reviewer action in one Update: it opens the request (a closed
// request, or a person who may not answer it, is refused) and lets decide say
// what changes. A *Refusal from decide is audited and returned after the
// commit; any other error aborts the update.
func (c *Core) act(ctx context.Context, requestID string, by aah.Person, action string, decide decideFunc) (Outcome, error) {
	auth, parsed, err := c.authorityOver(ctx, requestID, by)
	if err != nil {
		return Outcome{}, err
	}
	var out Outcome
	var f refusal
	rec, err := c.update(ctx, requestID, func(rec store.Record) (*store.Change, error) {
		out, f = Outcome{}, refusal{}
		req, err := c.open(rec, parsed, by, auth)
		if err == nil {
			var ch *store.Change
			if ch, err = decide(rec, req, grant{auth: auth, rules: req.Rules(c.policy.Defaults.For(rec.Agent))}, &out); err == nil {
				return withChannel(ch, by), nil
			}
		}
		ch, err := f.refuse(rec, by, action, err)
		return withChannel(ch, by), err
	})
	return f.result(out, rec, err)
}

// withChannel records, in each audit entry of by's own, the channel they
// acted through when it is not Slack ("via": "api") and the agent acting
// with a reviewer's authority ("agent"), beside the person (the actor and
// "user"): the audit tells an API answer and an agent's from a click.
func withChannel(ch *store.Change, by aah.Person) *store.Change {
	if ch == nil || (by.Via == "" && by.Agent == "") {
		return ch
	}
	for i, e := range ch.Audit {
		if e.Actor != by.AgentID() {
			continue
		}
		data := make(map[string]any, len(e.Data)+3)
		for k, v := range e.Data {
			data[k] = v
		}
		if by.Via != "" {
			data["via"] = by.Via
		}
		if by.Agent != "" {
			data["agent"], data["user"] = by.Agent, by.ID
		}
		ch.Audit[i].Data = data
	}
	return ch
}

// open parses an open request the person may decide; a closed one, or a
// person who may not decide it, is a Refusal saying why.
//
// req is the request as parsed when authority was worked out (a request's
// document never changes after intake), or nil.
func (c *Core) open(rec store.Record, req *aah.Request, by aah.Person, auth authority) (*aah.Request, error) {
	if !rec.Status.Open() {
		return nil, &Refusal{Reason: closedReason(rec), Rule: RuleClosed}
	}
	if req == nil {
		var err error
		if req, err = rec.Request(); err != nil {
			return nil, err
		}
	}
	if !auth.allowed(rec.Mentions, rec.EscalatedTo, by.ID) {
		return nil, &Refusal{Reason: notAllowedReason(req), Rule: RuleReviewer}
	}
	return req, nil
}

func closedReason(rec store.Record) string {
	switch rec.Status {
	case aah.StatusResolved:
		return "This request is already resolved; nothing was changed."
	case aah.StatusWithdrawn:
		return "The agent withdrew this request; nothing was changed."
	case aah.StatusExpired:
		return "This request expired at its deadline; nothing was changed."
	}
	return "This request can no longer be answered."
}

// authorityOver works out what by may do on the request, before it is
// changed (see authority), and returns the request as parsed for it. A
// closed request needs no lookups: open refuses it.
func (c *Core) authorityOver(ctx context.Context, requestID string, by aah.Person) (authority, *aah.Request, error) {
	rec, err := c.store.Get(ctx, requestID)
	if err != nil {
		return authority{}, nil, fmt.Errorf("read request %s: %w", requestID, err)
	}
	if !rec.Status.Open() {
		return authority{closed: true}, nil, nil
	}
	req, err := rec.Request()
	if err != nil {
		return authority{}, nil, err
	}
	// Slack's 3 s covers the lookups and the ack (and a modal's trigger id
	// expires with it): past the budget the click is refused, to be retried.
	ctx, cancel := context.WithTimeout(ctx, authorizeBudget)
	defer cancel()
	auth, err := c.authorize(ctx, req, by)
	if err != nil {
		return authority{}, nil, fmt.Errorf("check who may decide %s: %w", requestID, err)
	}
	// A request's agent never changes, so this holds for the transaction.
	auth.ownAgent = by.Agent != "" && by.Agent == rec.Agent
	return auth, req, nil
}

// authorizeBudget bounds the Slack lookups one authorization may wait for.
const authorizeBudget = 2 * time.Second

// Check reports whether by may take action ("answer" or "comment") on the
// request now, before a modal is opened for it: a *Refusal (audited like a
// refused action) when not.
func (c *Core) Check(ctx context.Context, requestID string, by aah.Person, action string) error {
	_, err := c.act(ctx, requestID, by, action, func(_ store.Record, _ *aah.Request, g grant, _ *Outcome) (*store.Change, error) {
		if action == "comment" {
			return nil, nil
		}
		return nil, g.mayDecide()
	})
	return err
}

// refusal collects a refused action: its click_refused audit entry is
// committed like any change, and the Refusal is returned to the caller
// after the commit. A request that cannot be parsed is an error instead.
type refusal struct{ r *Refusal }

func (f *refusal) refuse(rec store.Record, by aah.Person, action string, err error) (*store.Change, error) {
	var r *Refusal
	if !errors.As(err, &r) {
		return nil, err
	}
	f.r = r
	return &store.Change{Audit: []store.AuditEvent{{Event: "click_refused", Actor: by.AgentID(),
		Data: map[string]any{"action": action, "reason": r.Reason, "rule": r.Rule, "status": string(rec.Status)}}}}, nil
}

// result turns Update's outcome into the caller's: a refusal wins over a
// successful commit of its audit entry.
func (f *refusal) result(out Outcome, rec store.Record, err error) (Outcome, error) {
	out.Record = rec
	if err == nil && f.r != nil {
		return Outcome{Record: rec}, f.r
	}
	return out, err
}

func cloneAnswers(in map[string]aah.Answer) map[string]aah.Answer {
	out := make(map[string]aah.Answer, len(in))
	for k, v := range in {
		out[k] = v
	}
	return out
}

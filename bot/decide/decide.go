// Package decide applies reviewers' actions to decision requests: it holds
// the resolution rule and builds the response artifact when a request resolves.
package decide

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/approvalbot/approvalbot/aah"
	"github.com/approvalbot/approvalbot/store"
	"github.com/google/uuid"
)

// Decider applies reviewers' actions to requests. Every action is one atomic
// store.Update: the answer, the status, the audit entries and, on
// resolution, the response artifact and its delivery job are written
// together or not at all, so double clicks, Slack retries and concurrent
// reviewers can neither resolve a request twice nor lose an answer.
//
// Resolution rule: a request with a single decision resolves on its first
// valid answer. With several, reviewers answer in any order and may change
// their answers (the audit keeps every version); Submit resolves the request
// once every required decision is answered. A decision whose control shows
// its default preselected (a menu, a multi-select, a date picker) counts as
// answered by the submitter with that value, marked "default_accepted":
// what the reviewer saw selected is what is sent. Other unanswered optional
// decisions then take their default (marked "defaulted" in the response).
//
// Who may decide is checked before anything is stored (see authorize.go):
// the request's reviewers, reviewer groups, required roles and escalation
// targets, and workspace admins; the requester may not decide their own
// request unless self-approval is allowed. Approval decisions that need
// several sign-offs (a quorum, or required roles) collect each person's
// verdict and settle when enough have approved, or when anyone rejects.
type Decider struct {
	store  *store.Store
	now    func() time.Time
	dir    Directory
	policy Policy
}

// Options configure a Decider.
type Options struct {
	// Now is the clock; default time.Now.
	Now func() time.Time
	// Directory looks up users' emails and user group members. Without it,
	// reviewers given by email or group match nobody (beyond the mentions
	// resolved when the message was posted).
	Directory Directory
	// Policy is the workspace-wide authorization configuration.
	Policy Policy
}

// NewDecider returns a Decider over st.
func NewDecider(st *store.Store, opts Options) *Decider {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Decider{store: st, now: opts.Now, dir: opts.Directory, policy: opts.Policy}
}

// Refusal is an action that changed nothing, with the reason to show the
// person (an ephemeral message or a modal error). It is audited.
type Refusal struct {
	Reason string
	// Field is the modal field the reason belongs to, if any.
	Field string
	// Rule names the rule that refused it (Rule… constants), for the audit.
	Rule string
}

func (r *Refusal) Error() string { return r.Reason }

// Outcome is the result of an accepted action.
type Outcome struct {
	Record   store.Record
	Resolved bool // this action resolved the request
	Changed  bool // false when the action repeated the current state (a double click)
}

// Answer records values for one or more decisions (several: "approve all")
// by one person. values holds typed values by decision id.
func (d *Decider) Answer(ctx context.Context, requestID string, by aah.Person, values map[string]any) (Outcome, error) {
	return d.answer(ctx, requestID, by, values, "")
}

// Reject rejects approval decisions with the person's reason, in one
// update: the reason becomes their comment on each decision (and their
// sign-off's reason), so it can neither be lost to a concurrent change nor
// outlive a refused rejection.
func (d *Decider) Reject(ctx context.Context, requestID string, decisionIDs []string, by aah.Person, reason string) (Outcome, error) {
	reason = strings.TrimSpace(reason)
	if reason == "" {
		return Outcome{}, &Refusal{Reason: "Say why you reject it.", Field: "comment", Rule: RuleRequireReason}
	}
	if utf8.RuneCountInString(reason) > aah.MaxTextLength {
		return Outcome{}, &Refusal{Reason: "A reason holds at most 3000 characters.", Field: "comment", Rule: RuleInvalid}
	}
	values := make(map[string]any, len(decisionIDs))
	for _, id := range decisionIDs {
		values[id] = false
	}
	return d.answer(ctx, requestID, by, values, reason)
}

func (d *Decider) answer(ctx context.Context, requestID string, by aah.Person, values map[string]any, reason string) (Outcome, error) {
	return d.act(ctx, requestID, by, "answer", func(rec store.Record, req *aah.Request, g grant, out *Outcome) (*store.Change, error) {
		if err := g.mayDecide(); err != nil {
			return nil, err
		}
		now := d.now().UTC()
		ch := &store.Change{Set: map[string]any{}}
		answers := cloneAnswers(rec.Answers)
		for id, raw := range values {
			dec, ok := req.Decision(id)
			if !ok {
				return nil, &Refusal{Reason: fmt.Sprintf("This request has no decision %q.", id), Rule: RuleInvalid}
			}
			v, err := aah.CheckAnswer(dec, raw)
			if err != nil {
				return nil, &Refusal{Reason: fmt.Sprintf("%s: %v", dec.Prompt, err), Field: "value", Rule: RuleInvalid}
			}
			prev, had := answers[id]
			a, data, err := g.answer(dec, prev, v, by, now, reason)
			if err != nil {
				return nil, err
			}
			if a == nil {
				continue // the same person repeating the same answer: nothing to record
			}
			answers[id] = *a
			ch.Answers = append(ch.Answers, *a)
			if had && prev.Answered() {
				data["previous_value"], data["previous_by"] = prev.Value, prev.By.ID
			}
			ch.Audit = append(ch.Audit, store.AuditEvent{Event: "answered", Actor: by.AgentID(), Data: data})
		}
		if len(ch.Answers) == 0 {
			return nil, nil // a double click or a Slack retry
		}
		out.Changed = true
		ch.Bump = true
		if len(req.Data.Decisions) == 1 && answers[req.Data.Decisions[0].ID].Answered() {
			out.Resolved = true
			return d.resolve(rec, req, answers, by, g, ch)
		}
		if rec.Status == aah.StatusPending {
			ch.Status = aah.StatusPartial
		}
		return ch, nil
	})
}

// Comment records a person's comment on a decision. Each person has one
// comment per decision (writing again replaces theirs; blank text removes
// it); other people's comments and answers never remove it, and the audit
// keeps every version.
func (d *Decider) Comment(ctx context.Context, requestID, decisionID string, by aah.Person, text string) (Outcome, error) {
	text = strings.TrimSpace(text)
	return d.act(ctx, requestID, by, "comment", func(rec store.Record, req *aah.Request, g grant, out *Outcome) (*store.Change, error) {
		if _, ok := req.Decision(decisionID); !ok {
			return nil, &Refusal{Reason: fmt.Sprintf("This request has no decision %q.", decisionID), Rule: RuleInvalid}
		}
		if utf8.RuneCountInString(text) > aah.MaxTextLength {
			return nil, &Refusal{Reason: "A comment holds at most 3000 characters.", Field: "comment", Rule: RuleInvalid}
		}
		a := rec.Answers[decisionID]
		prev, _ := a.CommentOf(by.ID)
		if prev.Text == text {
			return nil, nil
		}
		if text == "" && g.rules.RequireReason && rejectedBy(a, by.ID) {
			// A required reason stays with the rejection it explains.
			return nil, &Refusal{Reason: "Your rejection needs its reason: you can change your comment, not remove it.",
				Field: "comment", Rule: RuleRequireReason}
		}
		now := d.now().UTC()
		a = a.WithComment(aah.Comment{By: by, At: now, Text: text})
		a.DecisionID = decisionID
		if !a.Answered() && a.By.ID == "" {
			a.By, a.At = by, now // a comment before any answer
		}
		out.Changed = true
		return &store.Change{
			Answers: []aah.Answer{a}, Bump: true,
			Audit: []store.AuditEvent{{Event: "commented", Actor: by.AgentID(),
				Data: map[string]any{"decision_id": decisionID, "comment": text, "previous_comment": prev.Text}}},
		}, nil
	})
}

// rejectedBy reports whether the person's rejection stands on the answer:
// as its answer, or as their sign-off.
func rejectedBy(a aah.Answer, personID string) bool {
	if a.Value == false && a.By.ID == personID {
		return true
	}
	for _, so := range a.Signoffs {
		if so.By.ID == personID && !so.Approved {
			return true
		}
	}
	return false
}

// Submit resolves a request with several decisions once every required one
// is answered. Preselected defaults become the submitter's answers (marked
// DefaultAccepted); other unanswered optional decisions take their default.
func (d *Decider) Submit(ctx context.Context, requestID string, by aah.Person) (Outcome, error) {
	return d.act(ctx, requestID, by, "submit", func(rec store.Record, req *aah.Request, g grant, out *Outcome) (*store.Change, error) {
		if err := g.mayDecide(); err != nil {
			return nil, err
		}
		answers := cloneAnswers(rec.Answers)
		now := d.now().UTC()
		var missing []string
		var accepted []store.AuditEvent
		for _, dec := range req.Data.Decisions {
			if a, ok := answers[dec.ID]; ok && a.Answered() {
				continue
			}
			if v, ok := dec.PreselectedDefault(); ok {
				// The control showed this value selected when they clicked
				// Submit: what they saw is what is recorded, as theirs.
				if _, err := aah.CheckAnswer(dec, v); err != nil {
					return nil, fmt.Errorf("default of decision %q of %s: %w", dec.ID, rec.ID, err)
				}
				a := answers[dec.ID]
				a.DecisionID, a.Value, a.By, a.At, a.DefaultAccepted = dec.ID, v, by, now, true
				answers[dec.ID] = a
				accepted = append(accepted, store.AuditEvent{Event: "answered", Actor: by.AgentID(),
					Data: map[string]any{"decision_id": dec.ID, "value": v, "default_accepted": true}})
				continue
			}
			switch {
			case dec.Required:
				missing = append(missing, dec.Prompt)
			case dec.HasDefault() && !(dec.Type == aah.TypeApproval && g.rules.Gated() && dec.Default == true):
				// A default may reject a gated approval, never approve it:
				// that would skip its quorum and roles. It stays unanswered.
				a := answers[dec.ID]
				a.DecisionID, a.Value, a.Defaulted, a.At = dec.ID, dec.Default, true, time.Time{}
				answers[dec.ID] = a
			}
		}
		if len(missing) > 0 {
			return nil, &Refusal{Reason: "Answer every required decision before submitting. Still open: " + strings.Join(missing, "; "), Rule: RuleInvalid}
		}
		out.Changed, out.Resolved = true, true
		ch := &store.Change{Set: map[string]any{}, Bump: true,
			Audit: append(accepted, store.AuditEvent{Event: "submitted", Actor: by.AgentID()})}
		for _, dec := range req.Data.Decisions {
			if a := answers[dec.ID]; a.Defaulted || a.DefaultAccepted {
				ch.Answers = append(ch.Answers, a)
			}
		}
		return d.resolve(rec, req, answers, by, g, ch)
	})
}

// open parses an open request the person may decide; a closed one, or a
// person who may not decide it, is a Refusal saying why.
//
// req is the request as parsed when authority was worked out (a request's
// document never changes after intake), or nil.
func (d *Decider) open(rec store.Record, req *aah.Request, by aah.Person, auth authority) (*aah.Request, error) {
	if !rec.Status.Open() {
		return nil, &Refusal{Reason: closedReason(rec), Rule: RuleClosed}
	}
	if req == nil {
		var err error
		if req, err = parseStored(rec); err != nil {
			return nil, err
		}
	}
	if !auth.allowed(rec.Mentions, rec.EscalatedTo, by.ID) {
		return nil, &Refusal{Reason: notAllowedReason(req), Rule: RuleReviewer}
	}
	return req, nil
}

func parseStored(rec store.Record) (*aah.Request, error) {
	req, err := aah.Parse(rec.Document, aah.ParseOptions{Stored: true})
	if err != nil {
		return nil, fmt.Errorf("stored request %s does not parse: %w", rec.ID, err)
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

// act runs one reviewer action in one Update: it opens the request (a closed
// request, or a person who may not answer it, is refused) and lets decide say
// what changes. A *Refusal from decide is audited and returned after the
// commit; any other error aborts the update.
func (d *Decider) act(ctx context.Context, requestID string, by aah.Person, action string,
	decide func(rec store.Record, req *aah.Request, g grant, out *Outcome) (*store.Change, error)) (Outcome, error) {
	auth, parsed, err := d.authorityOver(ctx, requestID, by)
	if err != nil {
		return Outcome{}, err
	}
	var out Outcome
	var f refusal
	rec, err := d.store.Update(ctx, requestID, func(rec store.Record) (*store.Change, error) {
		out, f = Outcome{}, refusal{}
		req, err := d.open(rec, parsed, by, auth)
		if err == nil {
			var ch *store.Change
			if ch, err = decide(rec, req, grant{auth: auth, rules: req.Rules(d.policy.Defaults.For(rec.Agent))}, &out); err == nil {
				return ch, nil
			}
		}
		return f.refuse(rec, by, action, err)
	})
	return f.result(out, rec, err)
}

// authorityOver works out what by may do on the request, before it is
// changed (see authority), and returns the request as parsed for it. A
// closed request needs no lookups: open refuses it.
func (d *Decider) authorityOver(ctx context.Context, requestID string, by aah.Person) (authority, *aah.Request, error) {
	rec, err := d.store.Get(ctx, requestID)
	if err != nil {
		return authority{}, nil, fmt.Errorf("read request %s: %w", requestID, err)
	}
	if !rec.Status.Open() {
		return authority{closed: true}, nil, nil
	}
	req, err := parseStored(rec)
	if err != nil {
		return authority{}, nil, err
	}
	// Slack's 3 s covers the lookups and the ack (and a modal's trigger id
	// expires with it): past the budget the click is refused, to be retried.
	ctx, cancel := context.WithTimeout(ctx, authorizeBudget)
	defer cancel()
	auth, err := d.authorize(ctx, req, by)
	if err != nil {
		return authority{}, nil, fmt.Errorf("check who may decide %s: %w", requestID, err)
	}
	return auth, req, nil
}

// authorizeBudget bounds the Slack lookups one authorization may wait for.
const authorizeBudget = 2 * time.Second

// Check reports whether by may take action ("answer" or "comment") on the
// request now, before a modal is opened for it: a *Refusal (audited like a
// refused action) when not.
func (d *Decider) Check(ctx context.Context, requestID string, by aah.Person, action string) error {
	_, err := d.act(ctx, requestID, by, action, func(_ store.Record, _ *aah.Request, g grant, _ *Outcome) (*store.Change, error) {
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

// resolve turns the change into the resolution: status, the immutable
// response artifact, and its delivery, all in the same transaction.
// g is the resolver's grant: the required roles they hold become the
// response's source.agent_role.
func (d *Decider) resolve(rec store.Record, req *aah.Request, answers map[string]aah.Answer, by aah.Person, g grant, ch *store.Change) (*store.Change, error) {
	return d.finish(rec, req, answers, by, strings.Join(g.auth.roles, ","), ch, aah.OutcomeResolved), nil
}

// finish closes the request with a response: resolved, or expired (the
// deadline passed; the response says nothing was decided). The response is
// built once, here, and never changes; its delivery is scheduled with it.
func (d *Decider) finish(rec store.Record, req *aah.Request, answers map[string]aah.Answer, by aah.Person, role string, ch *store.Change, outcome string) *store.Change {
	now := d.now().UTC()
	resp := aah.BuildResponse(req, answers, aah.ResponseOptions{
		ID: "aah_decision_resp_" + uuid.NewString(), CreatedAt: now, ResolvedBy: by, ResolverRole: role, Outcome: outcome,
	})
	ch.Status = aah.StatusResolved
	event := "resolved"
	if outcome == aah.OutcomeExpired {
		ch.Status, event = aah.StatusExpired, "expired"
	}
	if ch.Set == nil {
		ch.Set = map[string]any{}
	}
	ch.Bump = true
	ch.Set["response"] = string(resp.JSON())
	ch.Set["resolved_ms"] = now.UnixMilli()
	ch.Set["resolved_by"] = mustPerson(by)
	if rec.ResponseURL != "" && req.CallbackURL() != "" {
		// expects_response: false sends nothing (records stored before
		// intake dropped the URL for it too); GET and long polls still serve it.
		ch.Set["delivery_state"] = store.DeliveryPending
		ch.Set["webhook_id"] = "msg_" + resp.Artifact.ID
		ch.Jobs = append(ch.Jobs, store.JobAt{ID: store.JobID(store.JobDeliver, rec.ID), At: now})
	}
	actor := by.AgentID()
	if by.ID == "" {
		actor = "system"
	}
	ch.Audit = append(ch.Audit, store.AuditEvent{Event: event, Actor: actor,
		Data: map[string]any{"overall_status": resp.Content.Body.Data.OverallStatus, "response_id": resp.Artifact.ID}})
	return ch
}

func mustPerson(p aah.Person) string { return p.ID + "|" + p.Name }

func cloneAnswers(in map[string]aah.Answer) map[string]aah.Answer {
	out := make(map[string]aah.Answer, len(in))
	for k, v := range in {
		out[k] = v
	}
	return out
}

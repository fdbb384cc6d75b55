package client

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"time"

	"github.com/approvalbot/approvalbot/aah"
)

// This file is the gate helper of seed 001 §2.1: before an agent runs a
// tool call (tool_execution, specific_tools, destructive_actions gates),
// submits a plan (plan_approval) or a final answer (final_response), it
// asks a human and acts on the verdict:
//
//	v, err := client.RequireApproval(ctx, c, client.Action{Tool: "scale_service",
//		Parameters: map[string]any{"replicas": 12}, Editable: map[string]client.Param{"replicas": {Type: "integer", Maximum: client.Float(16)}}}, nil)
//	if err == nil && v.Allowed() { scale(v.Parameters) }

// Action is the proposed action a gate asks about (seed 001 §2.3: the
// proposed action and its risk assessment).
type Action struct {
	// Tool is proposed_action.tool_name: the tool the agent would call.
	Tool string
	// Type is proposed_action.action_type: "tool_call" (the default),
	// "plan", "response" or the agent's own.
	Type string
	// Parameters are the call's arguments as the agent proposes them.
	Parameters map[string]any
	// Editable are the parameters a reviewer may change before approving
	// ("modify"); the gate then offers modify and Verdict.Parameters holds
	// the edited set.
	Editable map[string]Param
	// ExpectedOutcome says what happens if it runs.
	ExpectedOutcome string
	// Reversible: nil when unknown; Bool(false) marks an irreversible
	// action (flagged, and approving it asks the reviewer to confirm).
	Reversible *bool
	// Cost is the estimated cost (≥ 0) in CostUnit (e.g. "USD"); 0: not said.
	Cost     float64
	CostUnit string
	// Risk is the agent's risk assessment; nil: none.
	Risk *Risk
	// RejectReasons are reasons a reviewer who rejects may pick.
	RejectReasons []string
	// ActionKey names the kind of action for standing approvals (default:
	// Tool).
	ActionKey string
	// Prompt is the question (default "Run <Tool>?"); Description adds to
	// it.
	Prompt      string
	Description string
}

// Param is an editable parameter's type and bounds ("string", "number",
// "integer", "boolean").
type Param struct {
	Type      string   `json:"type"`
	Enum      []string `json:"enum,omitempty"`
	Minimum   *float64 `json:"minimum,omitempty"`
	Maximum   *float64 `json:"maximum,omitempty"`
	MinLength *int     `json:"min_length,omitempty"`
	MaxLength *int     `json:"max_length,omitempty"`
	Pattern   string   `json:"pattern,omitempty"`
}

// Risk is seed 001 §2.3.2's risk assessment.
type Risk struct {
	Level         string   `json:"risk_level"` // low, medium, high, critical
	Factors       []string `json:"risk_factors,omitempty"`
	Consequences  []string `json:"potential_consequences,omitempty"`
	Reversibility string   `json:"reversibility,omitempty"` // fully, partially, irreversible
	Confidence    *float64 `json:"confidence,omitempty"`    // 0..1
}

// Bool and Float return a pointer to their argument, for Action.Reversible
// and Param's bounds.
func Bool(b bool) *bool        { return &b }
func Float(f float64) *float64 { return &f }
func Int(i int) *int           { return &i }

// GateOptions are a gate's settings (seed 001 §2.1.2's gate configuration);
// the zero value (or nil) takes every default.
type GateOptions struct {
	// ID is the request's id (default: generated).
	ID string
	// Title is the message's title (default "Approve <Tool>").
	Title string
	// Context is what the reviewer reads first: why the agent wants this.
	Context string
	// AgentID (default "agent"), AgentName and TaskID say who asks.
	AgentID   string
	AgentName string
	TaskID    string
	// Timeout is how long reviewers have (default 5 minutes, seed 001's
	// timeout_seconds); OnTimeout what then happens (extensions.on_deadline:
	// "reject", the default as in seed 001; "approve"; or "expire": nothing
	// decided, Verdict Expired).
	Timeout   time.Duration
	OnTimeout string
	// Responses are the verbs offered (default: approve, reject, modify when
	// the action has Editable, defer, change_plan, escalate, abort).
	Responses []aah.Verb
	// RequireReason makes a rejection say why.
	RequireReason bool
	// Reviewers (Slack user ids or emails) and Channel say who is asked and
	// where (default: the bot's default reviewers and channel).
	Reviewers []string
	Channel   string
	// Priority is handoff.priority.
	Priority string
	// ResponseURL also has the response POSTed there (see CallbackHandler).
	ResponseURL string
	// Follows lists earlier requests this one follows up (a deferred gate
	// tried again: handoff.parent_artifact_ids).
	Follows []string
}

// DecisionID is the id of the gate's one decision.
const DecisionID = "action"

// Outcome is how a gate ended.
type Outcome string

// The outcomes of a gate.
const (
	Approved   Outcome = "approved"    // run it as proposed (Verdict.Parameters)
	Modified   Outcome = "modified"    // run it with the reviewer's parameters (Verdict.Parameters)
	Rejected   Outcome = "rejected"    // do not run it (Verdict.Reason)
	Deferred   Outcome = "deferred"    // not now: try another approach (Verdict.Text is the guidance)
	ChangePlan Outcome = "change_plan" // make a new plan that meets Verdict.Text
	Aborted    Outcome = "aborted"     // stop the run (Verdict.Text is why)
	Expired    Outcome = "expired"     // nobody decided by the deadline
	Withdrawn  Outcome = "withdrawn"   // the request was withdrawn
)

// Verdict is the human's answer to a gate.
type Verdict struct {
	Outcome   Outcome
	RequestID string
	// Parameters are what to run with, when Allowed: the proposal, or the
	// whole set as the reviewer edited it (Modified).
	Parameters map[string]any
	// OriginalParameters are the proposal, when Modified.
	OriginalParameters map[string]any
	// Reason is why it was rejected: the reviewer's words, else the reason
	// they picked (RejectReason).
	Reason       string
	RejectReason string
	// Text is the guidance (Deferred), requirement (ChangePlan) or reason
	// (Aborted).
	Text string
	// Comment is the reviewer's comment on an approval.
	Comment string
	// TimedOut says the deadline's OnTimeout gave the verdict, not a person.
	TimedOut bool
	// By is who decided ("human:<Slack user id>", "agent:<name>"); ByName
	// their name.
	By     string
	ByName string
	// Response is the whole decision response (nil when Withdrawn).
	Response *aah.Response
}

// Allowed reports whether the action may run (approved, or approved with
// edits: use Parameters).
func (v Verdict) Allowed() bool { return v.Outcome == Approved || v.Outcome == Modified }

// Request builds the single-decision request a gate submits for action.
func (a Action) Request(opts *GateOptions) (*Request, error) {
	var o GateOptions
	if opts != nil {
		o = *opts
	}
	if a.Tool == "" {
		return nil, errors.New("approvalbot: the gate's Action needs a Tool")
	}
	pa := map[string]any{"action_type": cmp.Or(a.Type, "tool_call"), "tool_name": a.Tool}
	params := a.Parameters
	if params == nil {
		params = map[string]any{}
	}
	pa["parameters"] = params
	if a.ExpectedOutcome != "" {
		pa["expected_outcome"] = a.ExpectedOutcome
	}
	if a.Reversible != nil {
		pa["reversible"] = *a.Reversible
	}
	if a.Cost > 0 {
		pa["estimated_cost"] = a.Cost
		if a.CostUnit != "" {
			pa["cost_unit"] = a.CostUnit
		}
	}
	responses := o.Responses
	if responses == nil {
		responses = []aah.Verb{aah.VerbApprove, aah.VerbReject}
		if len(a.Editable) > 0 {
			responses = append(responses, aah.VerbModify)
		}
		responses = append(responses, aah.VerbDefer, aah.VerbChangePlan, aah.VerbEscalate, aah.VerbAbort)
	}
	ext := map[string]any{"proposed_action": pa, "responses": responses}
	if a.Risk != nil {
		ext["risk_assessment"] = a.Risk
	}
	if len(a.Editable) > 0 {
		ext["editable"] = a.Editable
	}
	if len(a.RejectReasons) > 0 {
		ext["reject_reasons"] = a.RejectReasons
	}
	if a.ActionKey != "" {
		ext["action_key"] = a.ActionKey
	}
	extensions := map[string]any{
		"decisions":   map[string]any{DecisionID: ext},
		"on_deadline": cmp.Or(o.OnTimeout, string(aah.DeadlineReject)),
	}
	slack := map[string]any{}
	if len(o.Reviewers) > 0 {
		slack["reviewers"] = o.Reviewers
	}
	if o.Channel != "" {
		slack["channel"] = o.Channel
	}
	if o.RequireReason {
		slack["require_reason"] = true
	}
	if len(slack) > 0 {
		extensions["slack"] = slack
	}
	return &Request{
		ID:          o.ID,
		Title:       cmp.Or(o.Title, "Approve "+a.Tool),
		AgentID:     o.AgentID,
		AgentName:   o.AgentName,
		TaskID:      o.TaskID,
		Context:     o.Context,
		Deadline:    time.Now().Add(cmp.Or(o.Timeout, 5*time.Minute)),
		ResponseURL: o.ResponseURL,
		Priority:    o.Priority,
		Decisions: []Decision{{ID: DecisionID, Type: aah.TypeApproval, Required: true,
			Prompt: cmp.Or(a.Prompt, "Run "+a.Tool+"?"), Description: a.Description}},
		ParentArtifactIDs: o.Follows,
		Extensions:        extensions,
	}, nil
}

// RequireApproval asks a human whether the agent may take action: it
// submits a single-decision request (the proposed action, its risk, the
// verbs offered), waits for it to close, and returns the verdict. Only
// Allowed verdicts let the action run. When ctx ends first the request is
// withdrawn (best effort), so nobody answers a question no one waits for.
func RequireApproval(ctx context.Context, c *Client, action Action, opts *GateOptions) (Verdict, error) {
	req, err := action.Request(opts)
	if err != nil {
		return Verdict{}, err
	}
	if req.ID == "" {
		// Fixed before the first attempt, so that a gate cancelled while
		// its submission was in flight can still withdraw what the bot
		// may have stored.
		req.ID = NewID()
	}
	sub, err := c.Submit(ctx, req)
	if err == nil {
		view := sub.View
		if view == nil || view.Open() {
			view, err = c.Wait(ctx, sub.ID)
		}
		if err == nil {
			return VerdictOf(view, action.Parameters)
		}
	}
	if ctx.Err() != nil {
		// Nobody waits for the verdict any more: reviewers must not be
		// left a request whose agent has gone (a 404 for one never
		// stored is fine).
		wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		_, _ = c.Withdraw(wctx, req.ID)
	}
	return Verdict{}, err
}

// VerdictOf reads a closed gate request's verdict; proposed are the
// parameters the gate proposed (Verdict.Parameters of a plain approval).
func VerdictOf(view *View, proposed map[string]any) (Verdict, error) {
	v := Verdict{RequestID: view.ID, Response: view.Response}
	if view.Status == aah.StatusWithdrawn {
		v.Outcome = Withdrawn
		return v, nil
	}
	r := view.Response
	if r == nil {
		return v, fmt.Errorf("approvalbot: request %s is %s without a response", view.ID, view.Status)
	}
	v.By, v.ByName = r.Source.AgentID, r.Source.AgentName
	if d := r.Content.Body.Data.Directive; d != nil {
		v.By, v.ByName = d.DecidedBy.AgentID(), d.DecidedBy.Name
		switch d.Action {
		case aah.VerbDefer:
			v.Outcome, v.Text = Deferred, d.Guidance
		case aah.VerbChangePlan:
			v.Outcome, v.Text = ChangePlan, d.Requirement
		case aah.VerbAbort:
			v.Outcome, v.Text = Aborted, d.Reason
		default:
			return v, fmt.Errorf("approvalbot: request %s ended with an unknown directive %q", view.ID, d.Action)
		}
		return v, nil
	}
	var ans *aah.DecisionAnswer
	for i := range r.Content.Body.Data.Responses {
		if r.Content.Body.Data.Responses[i].DecisionID == DecisionID {
			ans = &r.Content.Body.Data.Responses[i]
		}
	}
	if ans == nil && len(r.Content.Body.Data.Responses) == 1 {
		ans = &r.Content.Body.Data.Responses[0] // a gate request made by hand
	}
	if ans == nil || ans.Approved == nil {
		v.Outcome = Expired
		return v, nil
	}
	v.TimedOut = ans.TimedOut
	if ans.Comment != nil {
		v.Comment = *ans.Comment
	}
	switch {
	case !*ans.Approved:
		v.Outcome, v.RejectReason = Rejected, ans.RejectReason
		v.Reason = cmp.Or(v.Comment, ans.RejectReason)
	case ans.Modified:
		v.Outcome, v.Parameters, v.OriginalParameters = Modified, ans.Parameters, ans.OriginalParameters
	default:
		v.Outcome, v.Parameters = Approved, maps.Clone(proposed)
	}
	return v, nil
}

package aah

import "time"

// This file holds the review extension (extensions.decisions): what an agent
// may attach to a decision so a reviewer can decide well and answer with
// more than yes or no (seed 001 §2.2.2 and §2.3, seed 004's change_plan).
// A request without it behaves exactly as before: approval decisions take
// approve and reject, nothing else.
//
//	"extensions": {
//	  "decisions": {
//	    "<decision id>": {
//	      "proposed_action": {"action_type": "tool_call", "tool_name": "scale_service",
//	        "parameters": {"service": "api", "replicas": 6}, "expected_outcome": "…",
//	        "reversible": true, "estimated_cost": 12.5, "cost_unit": "USD"},
//	      "risk_assessment": {"risk_level": "high", "risk_factors": ["…"],
//	        "potential_consequences": ["…"], "reversibility": "partially", "confidence": 0.8},
//	      "responses": ["approve", "reject", "modify", "defer", "change_plan", "escalate", "abort"],
//	      "editable": {"replicas": {"type": "integer", "minimum": 1, "maximum": 10}},
//	      "reject_reasons": ["Too expensive", "Wrong service"],
//	      "action_key": "scale_service:api",
//	      "precision": "datetime"
//	    }
//	  }
//	}

// Verb is a reviewer's response to a decision (seed 001 §2.2.2, seed 004).
type Verb string

// The reviewer verbs. Approve, reject and modify answer one approval
// decision; defer, change_plan and abort end the whole request's round
// (a Directive); escalate hands the request to someone else and leaves it
// open.
const (
	VerbApprove    Verb = "approve"
	VerbReject     Verb = "reject"
	VerbModify     Verb = "modify"
	VerbDefer      Verb = "defer"
	VerbChangePlan Verb = "change_plan"
	VerbEscalate   Verb = "escalate"
	VerbAbort      Verb = "abort"
)

// Verbs lists every verb in the order controls show them.
var Verbs = []Verb{VerbApprove, VerbReject, VerbModify, VerbDefer, VerbChangePlan, VerbEscalate, VerbAbort}

// RequestVerbs are the verbs that act on the whole request rather than one
// decision. A request offers one when any of its decisions accepts it.
var RequestVerbs = []Verb{VerbDefer, VerbChangePlan, VerbEscalate, VerbAbort}

// Review is extensions.decisions.<decision id>: the proposed action, its
// risk, and which responses the agent accepts for the decision.
type Review struct {
	// Action is the proposed action (seed 001 §2.3.1 ProposedAction); nil
	// when the agent sent none.
	Action *ProposedAction
	// Risk is the agent's risk assessment (seed 001 §2.3.2); nil when absent.
	Risk *RiskAssessment
	// Responses are the verbs the agent accepts for this decision, in
	// Verbs order. Nil (absent) means today's: approve and reject for an
	// approval decision, the plain answer for the others.
	Responses []Verb
	// Editable are the parameters of Action.Parameters a reviewer may edit
	// when modifying, in Action.ParameterOrder.
	Editable []EditableParam
	// RejectReasons are short reasons the agent offers a reviewer who
	// rejects (HumanLayer's reject options); the reviewer may also write
	// their own.
	RejectReasons []string
	// ActionKey names "this kind of action" for standing approvals
	// (approve this agent's <action key> for a while); defaults to
	// Action.ToolName. Empty: the decision cannot be granted standing
	// approval.
	ActionKey string
	// DateTime says a date decision asks for a moment (a date and a time,
	// "precision": "datetime"), not only a day.
	DateTime bool
}

// ProposedAction is what the agent proposes to do if the decision is
// approved (seed 001 §2.3.1).
type ProposedAction struct {
	ActionType string // "tool_call", "response", "plan" or the agent's own
	ToolName   string
	// Parameters are the action's parameters as decoded JSON (string,
	// float64, bool, nil, []any, map[string]any), in ParameterOrder.
	Parameters map[string]any
	// ParameterOrder lists the parameter names sorted by name: the decoded
	// document keeps no key order, and every reader must show them alike.
	ParameterOrder  []string
	ExpectedOutcome string
	// Reversible is nil when the agent did not say; false marks an
	// irreversible action (flagged, and approving it asks to confirm).
	Reversible    *bool
	EstimatedCost *float64
	CostUnit      string // e.g. "USD"; empty when not given
}

// The risk levels of seed 001 §2.3.2, lowest first.
const (
	RiskLow      = "low"
	RiskMedium   = "medium"
	RiskHigh     = "high"
	RiskCritical = "critical"
)

// The reversibility values of seed 001 §2.3.2.
const (
	ReversibleFully     = "fully"
	ReversiblePartially = "partially"
	Irreversible        = "irreversible"
)

// RiskAssessment is seed 001 §2.3.2's risk assessment.
type RiskAssessment struct {
	Level         string // RiskLow … RiskCritical
	Factors       []string
	Consequences  []string // potential_consequences
	Reversibility string   // ReversibleFully, ReversiblePartially, Irreversible or ""
	Confidence    *float64 // 0..1, nil when absent
}

// The parameter types an editable parameter may declare.
const (
	ParamString  = "string"
	ParamNumber  = "number"
	ParamInteger = "integer"
	ParamBoolean = "boolean"
)

// EditableParam is one parameter a reviewer may edit, with the type and
// constraints the edited value must meet (a subset of JSON Schema's
// keywords, with their meaning).
type EditableParam struct {
	Name      string
	Type      string   // ParamString, ParamNumber, ParamInteger, ParamBoolean
	Enum      []string // string parameters: the allowed values (a menu); nil: free text
	Minimum   *float64 // number and integer parameters
	Maximum   *float64
	MinLength *int // string parameters, in characters
	MaxLength *int
	Pattern   string // string parameters, RE2
}

// Directive ends a request's round with something other than answers: the
// reviewer deferred it (try another approach, with guidance), asked the
// agent to change its plan (with a new requirement), or aborted the agent's
// run (with a reason). The request resolves; nothing in it was decided.
type Directive struct {
	Verb Verb      `json:"verb"` // VerbDefer, VerbChangePlan or VerbAbort
	Text string    `json:"text"` // the guidance, requirement or reason
	By   Person    `json:"by"`
	At   time.Time `json:"at"`
}

// GrantRef is the standing approval that answered a decision, as the answer,
// the response and the audit carry it.
type GrantRef struct {
	ID        string    `json:"id"`
	ActionKey string    `json:"action_key"`
	Agent     string    `json:"agent"` // the authenticated agent (intake token name) it covers
	By        Person    `json:"by"`    // who granted it
	GrantedAt time.Time `json:"granted_at"`
	ExpiresAt time.Time `json:"expires_at"`
	// FromRequest is the request whose approval granted it.
	FromRequest string `json:"from_request,omitempty"`
}

// Reassignment is an escalation a reviewer made by hand ("escalate" verb),
// as opposed to a timed data.escalation step: who handed the request to
// whom, when, and why.
type Reassignment struct {
	By   Person    `json:"by"`
	To   string    `json:"to"` // as given: a Slack user id, user group id, channel id or "#name", or an email
	At   time.Time `json:"at"`
	Note string    `json:"note,omitempty"`
}

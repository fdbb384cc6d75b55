// Package aah holds the AAH human-in-the-loop wire types (proposal AAH-HITL-001):
// the decision/request artifact agents send, its decision types and lifecycle
// states, and the parser that validates a request exactly as the spec defines it.
//
// It is a leaf package: it knows nothing about Slack, Redis or HTTP.
package aah

import (
	"encoding/json"
	"time"
)

// Identifiers the spec fixes.
const (
	ArtifactTypeRequest  = "decision/request"
	ArtifactTypeResponse = "decision/response"
	SchemaRequest        = "aah:decision/request@1.0"
	SchemaResponse       = "aah:decision/response@1.0"
	MediaTypeRequest     = "application/vnd.aah.decision-request+json"
	MediaTypeResponse    = "application/vnd.aah.decision-response+json"
	// TargetRoleHuman is the only handoff.target_role approvalbot takes:
	// it hands decisions to people.
	TargetRoleHuman = "human"
)

// DecisionType is one of the six decision types of spec §2.
type DecisionType string

// The decision types of spec §2.
const (
	TypeApproval    DecisionType = "approval"
	TypeChoice      DecisionType = "choice"
	TypeMultiChoice DecisionType = "multi_choice"
	TypeText        DecisionType = "text"
	TypeNumber      DecisionType = "number"
	TypeDate        DecisionType = "date"
)

// DecisionTypes lists every valid type in spec order.
var DecisionTypes = []DecisionType{TypeApproval, TypeChoice, TypeMultiChoice, TypeText, TypeNumber, TypeDate}

// Status is a lifecycle state of a decision request (spec §6).
type Status string

// The lifecycle states of spec §6.
const (
	StatusPending   Status = "pending"
	StatusPartial   Status = "partial"
	StatusResolved  Status = "resolved"
	StatusExpired   Status = "expired"
	StatusEscalated Status = "escalated"
	StatusWithdrawn Status = "withdrawn"
)

// Statuses lists every lifecycle state in spec order.
var Statuses = []Status{StatusPending, StatusPartial, StatusResolved, StatusExpired, StatusEscalated, StatusWithdrawn}

// Open reports whether a request in this state can still be answered or withdrawn.
func (s Status) Open() bool {
	return s == StatusPending || s == StatusPartial || s == StatusEscalated
}

// Valid reports whether s is one of the spec's states.
func (s Status) Valid() bool {
	for _, v := range Statuses {
		if s == v {
			return true
		}
	}
	return false
}

// Request is a validated decision/request artifact. Fields the spec does not
// define are not represented here; the caller keeps the original document
// verbatim for that (forward compatibility).
type Request struct {
	AAHVersion string     `json:"aah_version"`
	Artifact   Artifact   `json:"artifact"`
	Source     Source     `json:"source"`
	Data       Data       `json:"-"` // content.body.data
	Handoff    Handoff    `json:"handoff"`
	Lifecycle  Lifecycle  `json:"lifecycle"`
	Slack      SlackHints `json:"-"` // extensions.slack
	// OnDeadline is extensions.on_deadline: what happens when the deadline
	// passes with the request still open (default DeadlineExpire).
	OnDeadline DeadlineAction `json:"-"`
	// Events is extensions.events: a callback the request's progress
	// events are POSTed to; nil when the agent subscribed none.
	Events *EventSubscription `json:"-"`
}

// DeadlineAction is the timeout action applied at the deadline.
type DeadlineAction string

// The deadline actions (seed 001 §2.4 timeout actions, as extensions.on_deadline).
const (
	// DeadlineExpire: status expired; the response says nothing was decided
	// and lists what was answered.
	DeadlineExpire DeadlineAction = "expire"
	// DeadlineApplyDefaults resolves with each unanswered decision's default,
	// or expires when a required one has none.
	DeadlineApplyDefaults DeadlineAction = "apply_defaults"
	// DeadlineReject / DeadlineApprove answer every unanswered approval
	// decision; other unanswered decisions take their default, and the
	// request expires if a required one still has no value.
	DeadlineReject  DeadlineAction = "reject"
	DeadlineApprove DeadlineAction = "approve"
)

// Artifact is the artifact header.
type Artifact struct {
	ID        string    `json:"id"`
	Type      string    `json:"type"`
	Title     string    `json:"title"`
	CreatedAt time.Time `json:"created_at"` // zero when the agent sent none
}

// Source names the requesting agent.
type Source struct {
	AgentID   string `json:"agent_id"`
	AgentName string `json:"agent_name,omitempty"`
	AgentRole string `json:"agent_role,omitempty"`
	TaskID    string `json:"task_id,omitempty"`
}

// Data is content.body.data of a decision request (spec §3).
type Data struct {
	Context    string
	Decisions  []Decision
	Blocking   []BlockingItem
	Deadline   time.Time // zero when absent
	Escalation []EscalationStep
}

// EscalationStep is one {after, to} step. The spec defines a single object;
// a list of steps (a chain) is accepted as an extension.
type EscalationStep struct {
	After    time.Duration
	AfterRaw string // as the agent wrote it, e.g. "24h"
	To       string
}

// Decision is one decision of a request (spec §3).
type Decision struct {
	ID          string
	Type        DecisionType
	Prompt      string
	Description string
	Required    bool
	// Default is the typed default: bool (approval), string (choice, text, date),
	// []string (multi_choice), float64 (number); nil when absent or null.
	Default     any
	Options     []Option
	Constraints Constraints
	// Review is extensions.decisions.<id>: the proposed action, its risk
	// and the responses the agent accepts (review.go); nil when absent.
	Review *Review
}

// HasDefault reports whether the decision carries a non-null default.
func (d Decision) HasDefault() bool { return d.Default != nil }

// Option is a choice option.
type Option struct {
	Value       string
	Label       string
	Description string
}

// OptionLabel returns the label of the option with the given value, or the value itself.
func (d Decision) OptionLabel(value string) string {
	for _, o := range d.Options {
		if o.Value == value {
			return o.Label
		}
	}
	return value
}

// Constraints bound text length (text), value (number) or selection count
// (multi_choice), and a pattern for text. Nil means unbounded.
type Constraints struct {
	Min     *float64
	Max     *float64
	Pattern string // RE2 syntax, anchored by the author if they want it
	// MinDate and MaxDate bound a date decision's answer (constraints.min
	// and max given as ISO 8601 dates or date-times); "" is unbounded.
	MinDate string
	MaxDate string
}

// BlockingItem is a task or artifact blocked by the request.
type BlockingItem struct {
	TaskID      string
	ArtifactID  string
	Description string
}

// Handoff is the handoff section, with the response_url addition.
type Handoff struct {
	TargetRole       string    `json:"target_role,omitempty"`
	ExpectsResponse  *bool     `json:"expects_response,omitempty"`
	ResponseDeadline time.Time `json:"response_deadline"`
	Priority         string    `json:"priority,omitempty"`
	ResponseURL      string    `json:"response_url,omitempty"`
	// ParentArtifactIDs is handoff.parent_artifact_ids: earlier artifacts
	// this request follows up (e.g. a request the reviewer deferred).
	ParentArtifactIDs []string `json:"parent_artifact_ids,omitempty"`
}

// Lifecycle is the lifecycle section as sent.
type Lifecycle struct {
	Status     string `json:"status,omitempty"`
	Visibility string `json:"visibility,omitempty"`
}

// SlackHints is extensions.slack: where to post, whom to mention, and who
// may decide (see Rules).
type SlackHints struct {
	Channel   string
	Reviewers []string // Slack user ids (U…/W…) or email addresses
	// ReviewerGroups are Slack user group ids (S…) whose members may decide.
	ReviewerGroups []string
	// RequiredRoles must each approve every approval decision.
	RequiredRoles []Role
	// Quorum is how many distinct people must approve each approval
	// decision; 0 keeps the workspace default.
	Quorum int
	// AllowSelfApproval and RequireReason override the workspace defaults
	// when set.
	AllowSelfApproval *bool
	RequireReason     *bool
	// RequestedBy is the human the agent asks for (Slack user id or email);
	// unless self-approval is allowed they cannot decide the request.
	RequestedBy string
	// Reminders overrides the configured reminder schedule; nil keeps it.
	Reminders *ReminderPlan
}

// ReminderPlan is extensions.slack.reminders: remind every Every, at most Max
// times (0 turns reminders off).
type ReminderPlan struct {
	Every time.Duration
	Max   int
}

// EffectiveDeadline is the deadline that governs the request (its timers,
// its message, /approvals' overdue list): the earlier of data.deadline and
// handoff.response_deadline when both are set, else the one that is; zero
// when neither is. A response the agent needs by one time cannot wait for
// a later one.
func (r *Request) EffectiveDeadline() time.Time {
	dl, rd := r.Data.Deadline, r.Handoff.ResponseDeadline
	if dl.IsZero() || (!rd.IsZero() && rd.Before(dl)) {
		return rd
	}
	return dl
}

// CallbackURL is where the response is POSTed: handoff.response_url, or ""
// when the request says handoff.expects_response: false (the response is
// still stored, and GET and long polls return it).
func (r *Request) CallbackURL() string {
	if r.Handoff.ExpectsResponse != nil && !*r.Handoff.ExpectsResponse {
		return ""
	}
	return r.Handoff.ResponseURL
}

// Decision returns the decision with the given id.
func (r *Request) Decision(id string) (Decision, bool) {
	for _, d := range r.Data.Decisions {
		if d.ID == id {
			return d, true
		}
	}
	return Decision{}, false
}

// FieldError names one problem with one field of a request. Field is a path
// such as "content.body.data.decisions[2].options".
type FieldError struct {
	Field   string `json:"field"`
	Message string `json:"message"`
}

// ValidationError carries every problem found in a request at once.
type ValidationError struct {
	Problems []FieldError
}

func (e *ValidationError) Error() string {
	if len(e.Problems) == 1 {
		return "invalid decision request: " + e.Problems[0].Field + ": " + e.Problems[0].Message
	}
	b, _ := json.Marshal(e.Problems)
	return "invalid decision request: " + string(b)
}

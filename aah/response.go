package aah

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"time"
)

// The overall_status values of a decision response (spec §5).
const (
	OverallAllApproved = "all_approved"
	OverallPartial     = "partial"
	OverallAllRejected = "all_rejected"
	OverallPending     = "pending"
)

// How a request ended, for ResponseOptions.Outcome.
const (
	OutcomeResolved = "resolved" // every required decision was answered (the default)
	OutcomeExpired  = "expired"  // the deadline passed; nothing was decided
)

// The source of a response nobody resolved by hand (an expired request).
const (
	SystemAgentID   = "system:approvalbot"
	SystemAgentName = "approvalbot"
)

// MaxSummaryLength bounds data.summary, in characters.
const MaxSummaryLength = 1000

// ResponseOptions are what BuildResponse cannot read from the request and
// its answers.
type ResponseOptions struct {
	// ID is the artifact id of the response; the caller generates it,
	// e.g. "aah_decision_resp_<uuid>".
	ID string
	// CreatedAt is when the request resolved. It is written in UTC to the
	// second; zero means now.
	CreatedAt time.Time
	// ResolvedBy is the human whose action resolved the request (the
	// response's source). The zero Person means the system resolved it
	// (a deadline), and the source is "system:approvalbot".
	ResolvedBy Person
	// ResolverRole is the role ResolvedBy answered in, written to the
	// response's source.agent_role (seed 000 §4 puts the responder's role
	// there): the required roles (extensions.slack.required_roles) they
	// hold, comma-separated; "" omits it. The requesting agent's own
	// source.agent_role is not copied: the response's source is the
	// responder.
	ResolverRole string
	// Outcome is OutcomeResolved (also when empty) or OutcomeExpired. Any
	// other value counts as resolved.
	Outcome string
	// Directive is set when a reviewer deferred, changed the plan or
	// aborted: the response carries it and says nothing was decided.
	Directive *Directive
	// Comment is the overall comment of whoever resolved the request (the
	// submitter's own summary, or the comment on the answer that resolved
	// it): data.comment, next to the machine summary; "" omits it.
	Comment string
	// CommentBy is who wrote Comment (ResolvedBy when zero).
	CommentBy Person
	// Escalated says the request was escalated before it closed;
	// EscalatedAt is when (zero when the time was not kept).
	Escalated   bool
	EscalatedAt time.Time
}

// Response is a decision/response artifact (spec §4–5). Its JSON encoding,
// JSON(), is the artifact approvalbot stores and sends.
type Response struct {
	AAHVersion string          `json:"aah_version"`
	Artifact   Artifact        `json:"artifact"`
	Source     Source          `json:"source"`
	Content    ResponseContent `json:"content"`
	Handoff    ResponseHandoff `json:"handoff"`
	Lifecycle  Lifecycle       `json:"lifecycle"`
}

// ResponseContent is the content section of a response.
type ResponseContent struct {
	MediaType string       `json:"media_type"`
	Body      ResponseBody `json:"body"`
}

// ResponseBody is content.body of a response.
type ResponseBody struct {
	Schema string       `json:"schema"`
	Data   ResponseData `json:"data"`
}

// ResponseData is content.body.data of a response (spec §5).
type ResponseData struct {
	RequestID     string           `json:"request_id"`
	Responses     []DecisionAnswer `json:"responses"`
	OverallStatus string           `json:"overall_status"` // see OverallStatus
	Summary       string           `json:"summary"`
	// Comment is the overall comment of the person who resolved the request
	// (their own summary, next to Summary, the machine's); absent when
	// they wrote none.
	Comment *ResponseComment `json:"comment,omitempty"`
	// Escalated says the request was escalated (data.escalation, or by a
	// reviewer) before it closed; EscalatedAt is when it first was.
	Escalated   bool      `json:"escalated,omitempty"`
	EscalatedAt time.Time `json:"escalated_at,omitzero"`
	// Directive says the reviewer ended the round with defer, change_plan
	// or abort rather than answers; absent otherwise.
	Directive *ResponseDirective `json:"directive,omitempty"`
}

// ResponseDirective is data.directive: what the agent is told to do instead.
type ResponseDirective struct {
	Action      Verb      `json:"action"`                // "defer", "change_plan" or "abort"
	Guidance    string    `json:"guidance,omitempty"`    // defer
	Requirement string    `json:"requirement,omitempty"` // change_plan (seed 004)
	Reason      string    `json:"reason,omitempty"`      // abort
	DecidedBy   Person    `json:"decided_by"`
	DecidedAt   time.Time `json:"decided_at"`
}

// DecisionAnswer is one entry of data.responses: the answer to one decision.
// Exactly one of Approved, Selected and Value is set for an answered
// decision, by the decision's type; none for an unanswered one, which has
// Answered set to false instead.
type DecisionAnswer struct {
	DecisionID string `json:"decision_id"`
	// Approved is the answer to an approval.
	Approved *bool `json:"approved,omitempty"`
	// Selected is a string (choice) or []string (multi_choice).
	Selected any `json:"selected,omitempty"`
	// Value is a string (text; date, ISO 8601 as answered) or a float64 (number).
	Value any `json:"value,omitempty"`
	// Comment is the rationale (see Answer.Rationale): the comment of the
	// person who answered, else the latest comment; nil encodes as null.
	Comment *string `json:"comment"`
	// Comments lists every person's comment on the decision (one each, their
	// latest), in the order they first commented; absent when there is none.
	Comments []ResponseComment `json:"comments,omitempty"`
	// DecidedAt is when a person gave the answer (UTC, to the second).
	DecidedAt time.Time `json:"decided_at,omitzero"`
	// DecidedBy names the person, only when more than one person answered
	// decisions of this request.
	DecidedBy *Person `json:"decided_by,omitempty"`
	// Defaulted says nobody answered and the decision took its default.
	Defaulted bool `json:"defaulted,omitempty"`
	// TimedOut says nobody answered before the deadline and the request's
	// on_deadline action (approve or reject) gave this answer.
	TimedOut bool `json:"timed_out,omitempty"`
	// DefaultAccepted says the person who submitted the request accepted the
	// default their control showed preselected (a menu, a multi-select, a
	// date picker) without changing it: a person's answer, decided_at is
	// when they submitted, but not a value they picked themselves.
	DefaultAccepted bool `json:"default_accepted,omitempty"`
	// Answered is false for a decision nobody answered that has no default.
	Answered *bool `json:"answered,omitempty"`
	// Signoffs lists every person's verdict on an approval decision that
	// needed several sign-offs (quorum or required roles), in signing order.
	Signoffs []ResponseSignoff `json:"signoffs,omitempty"`
	// Action is the reviewer's verb for a decision with the review
	// extension ("approve", "reject", "modify"); absent otherwise.
	Action Verb `json:"action,omitempty"`
	// Modified marks an approval given with edited parameters: Parameters
	// holds the edited set, OriginalParameters what the agent proposed.
	Modified           bool           `json:"modified,omitempty"`
	Parameters         map[string]any `json:"parameters,omitempty"`
	OriginalParameters map[string]any `json:"original_parameters,omitempty"`
	// RejectReason is the reason picked from the decision's reject_reasons.
	RejectReason string `json:"reject_reason,omitempty"`
	// Grant is the standing approval that approved the decision.
	Grant *GrantRef `json:"grant,omitempty"`
}

// ResponseSignoff is one person's verdict on an approval decision.
type ResponseSignoff struct {
	AgentID   string   `json:"agent_id"` // "human:<Slack user id>"
	AgentName string   `json:"agent_name"`
	Approved  bool     `json:"approved"`
	Roles     []string `json:"roles,omitempty"` // the required roles they signed for
	Reason    *string  `json:"reason,omitempty"`
	// At is when they signed (UTC, to the second).
	At time.Time `json:"at"`
}

// ResponseComment is one person's comment on a decision.
type ResponseComment struct {
	By     string `json:"by"`      // "human:<Slack user id>"
	ByName string `json:"by_name"` // their name, or the id when unknown
	// At is when they wrote it (UTC, to the second); absent for comments
	// stored before comment times were kept.
	At   time.Time `json:"at,omitzero"`
	Text string    `json:"text"`
}

// ResponseHandoff links the response to its request and the requesting agent.
type ResponseHandoff struct {
	ParentArtifactIDs []string `json:"parent_artifact_ids"`
	TargetAgent       string   `json:"target_agent"`
}

// JSON is the canonical encoding of the response: the bytes approvalbot
// stores and sends, never re-encoded later. It is deterministic (the same
// Response always encodes to the same bytes) and does not escape <, > and &.
func (r *Response) JSON() []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(r); err != nil {
		// BuildResponse only stores booleans, strings, string lists and
		// finite numbers; a hand-made Response holding anything else is a
		// programming error.
		panic(fmt.Sprintf("aah: encode decision response: %v", err))
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}

// BuildResponse builds the decision/response artifact for a request and its
// answers (keyed by decision id). Answers the caller recorded for the
// decisions' defaults carry Answer.Defaulted; answers without a value
// (comment only) count as unanswered, as do values whose Go type does not fit
// the decision's type (see Answer.Value). Answers to decisions the request
// does not hold are ignored.
func BuildResponse(req *Request, answers map[string]Answer, opts ResponseOptions) *Response {
	created := opts.CreatedAt
	if created.IsZero() {
		created = time.Now()
	}
	resp := &Response{
		AAHVersion: req.AAHVersion,
		Artifact: Artifact{
			ID:        opts.ID,
			Type:      ArtifactTypeResponse,
			Title:     "Response: " + req.Artifact.Title,
			CreatedAt: stamp(created),
		},
		Source:    Source{AgentID: SystemAgentID, AgentName: SystemAgentName},
		Content:   ResponseContent{MediaType: MediaTypeResponse, Body: ResponseBody{Schema: SchemaResponse}},
		Handoff:   ResponseHandoff{ParentArtifactIDs: []string{req.Artifact.ID}, TargetAgent: req.Source.AgentID},
		Lifecycle: Lifecycle{Status: "final"},
	}
	if p := opts.ResolvedBy; p.ID != "" {
		name := p.Name
		if name == "" {
			name = p.ID
		}
		resp.Source = Source{AgentID: p.AgentID(), AgentName: name, AgentRole: opts.ResolverRole}
	}

	people := map[string]bool{}
	for _, d := range req.Data.Decisions {
		if a, ok := answers[d.ID]; ok && !a.Defaulted && !a.TimedOut && a.By.ID != "" && answerValue(d, a) != nil {
			people[a.By.ID] = true
		}
	}
	data := &resp.Content.Body.Data
	data.RequestID = req.Artifact.ID
	data.Responses = make([]DecisionAnswer, 0, len(req.Data.Decisions))
	for _, d := range req.Data.Decisions {
		data.Responses = append(data.Responses, decisionAnswer(d, answers[d.ID], len(people) > 1))
	}
	data.OverallStatus = OverallStatus(req, answers, opts.Outcome)
	if dir := opts.Directive; dir != nil {
		data.Directive = responseDirective(*dir)
		data.OverallStatus = OverallPending // nothing was decided
		data.Summary = summary(req, answers, directiveSentence(*dir))
	} else {
		data.Summary = Summary(req, answers, opts.Outcome)
	}
	if text := strings.TrimSpace(opts.Comment); text != "" {
		by := opts.CommentBy
		if by.ID == "" {
			by = opts.ResolvedBy
		}
		name := by.Name
		if name == "" {
			name = by.ID
		}
		data.Comment = &ResponseComment{By: by.AgentID(), ByName: name, At: stamp(created), Text: text}
	}
	if opts.Escalated || !opts.EscalatedAt.IsZero() {
		data.Escalated = true
		if !opts.EscalatedAt.IsZero() {
			data.EscalatedAt = stamp(opts.EscalatedAt)
		}
	}
	return resp
}

func decisionAnswer(d Decision, a Answer, namePeople bool) DecisionAnswer {
	out := DecisionAnswer{DecisionID: d.ID}
	if c, ok := a.Rationale(); ok && strings.TrimSpace(c.Text) != "" {
		text := c.Text
		out.Comment = &text
	}
	for _, c := range a.Comments {
		if strings.TrimSpace(c.Text) == "" {
			continue
		}
		rc := ResponseComment{By: c.By.AgentID(), ByName: c.By.Name, Text: c.Text}
		if rc.ByName == "" {
			rc.ByName = c.By.ID
		}
		if !c.At.IsZero() {
			rc.At = stamp(c.At)
		}
		out.Comments = append(out.Comments, rc)
	}
	for _, so := range a.Signoffs {
		rs := ResponseSignoff{AgentID: so.By.AgentID(), AgentName: so.By.Name, Approved: so.Approved,
			Roles: so.Roles, At: stamp(so.At)}
		if rs.AgentName == "" {
			rs.AgentName = so.By.ID
		}
		if r := strings.TrimSpace(so.Reason); r != "" {
			rs.Reason = &so.Reason
		}
		out.Signoffs = append(out.Signoffs, rs)
	}
	v := answerValue(d, a)
	switch {
	case v == nil:
		no := false
		out.Answered = &no
		return out
	case d.Type == TypeApproval:
		b := v.(bool)
		out.Approved = &b
	case d.Type == TypeChoice || d.Type == TypeMultiChoice:
		out.Selected = v
	default:
		out.Value = v
	}
	reviewFields(d, a, v, &out)
	if a.Defaulted || a.TimedOut {
		out.Defaulted, out.TimedOut = a.Defaulted, a.TimedOut
		return out
	}
	out.DefaultAccepted = a.DefaultAccepted
	if !a.At.IsZero() {
		out.DecidedAt = stamp(a.At)
	}
	if namePeople && a.By.ID != "" {
		by := a.By
		if by.Name == "" {
			by.Name = by.ID // their name could not be looked up
		}
		out.DecidedBy = &by
	}
	return out
}

// stamp is a time as the response writes it: UTC, to the second.
func stamp(t time.Time) time.Time { return t.UTC().Truncate(time.Second) }

// answerValue is the answer's value typed for the decision (see
// Answer.Value), or nil when it has none that fits.
func answerValue(d Decision, a Answer) any {
	switch v := a.Value.(type) {
	case bool:
		if d.Type == TypeApproval {
			return v
		}
	case string:
		if d.Type == TypeChoice || d.Type == TypeText || d.Type == TypeDate {
			return v
		}
	case []string:
		if d.Type == TypeMultiChoice {
			if v == nil {
				v = []string{}
			}
			return v
		}
	case []any:
		if d.Type == TypeMultiChoice {
			out := make([]string, 0, len(v))
			for _, x := range v {
				s, ok := x.(string)
				if !ok {
					return nil
				}
				out = append(out, s)
			}
			return out
		}
	case float64:
		if d.Type == TypeNumber && !math.IsNaN(v) && !math.IsInf(v, 0) {
			return v
		}
	case json.Number:
		if f, err := v.Float64(); err == nil && d.Type == TypeNumber && !math.IsInf(f, 0) {
			return f
		}
	case int:
		if d.Type == TypeNumber {
			return float64(v)
		}
	}
	return nil
}

// OverallStatus is data.overall_status of the response to req:
//
//   - "pending" when the request expired (outcome "expired": nothing was
//     decided), or when any required decision has no value;
//   - otherwise it looks only at the approval decisions that have a value
//     (answered or defaulted): "all_approved" when every one is approved,
//     "all_rejected" when every one is rejected, "partial" when some are
//     approved and some rejected. Choice, multi_choice, text, number and date
//     decisions count neither for nor against. A request without any
//     answered approval decision is "all_approved": nothing was rejected.
func OverallStatus(req *Request, answers map[string]Answer, outcome string) string {
	if outcome == OutcomeExpired {
		return OverallPending
	}
	approved, rejected := 0, 0
	for _, d := range req.Data.Decisions {
		v := answerValue(d, answers[d.ID])
		if v == nil {
			if d.Required {
				return OverallPending
			}
			continue
		}
		if b, ok := v.(bool); ok {
			if b {
				approved++
			} else {
				rejected++
			}
		}
	}
	switch {
	case rejected == 0:
		return OverallAllApproved
	case approved == 0:
		return OverallAllRejected
	}
	return OverallPartial
}

// AnswersSoFar is the answers given so far to an open request, in the shape of
// the response's data.responses (one entry per decision, in the request's
// order), except that each answer always names who gave it (decided_by):
// what GET /v1/requests/{id} shows before the request resolves. An approval
// decision still collecting sign-offs has no value yet and lists them.
func AnswersSoFar(req *Request, answers map[string]Answer) []DecisionAnswer {
	out := make([]DecisionAnswer, 0, len(req.Data.Decisions))
	for _, d := range req.Data.Decisions {
		out = append(out, decisionAnswer(d, answers[d.ID], true))
	}
	return out
}

// AnswerProgress counts a request's decisions and how many have a value: what
// "n of m answered" says of an open request. A status of escalated does
// not show it (the status stays escalated however many answers follow),
// so the API, the listings and the Home tab show it next to the status.
type AnswerProgress struct {
	Answered         int `json:"answered"`          // decisions with a value a person gave
	Total            int `json:"total"`             // decisions of the request
	Required         int `json:"required"`          // required decisions
	RequiredAnswered int `json:"required_answered"` // required decisions with a value
}

// AnswerProgressOf counts the decisions of req answered in answers. Values nobody
// gave (a default taken, an on_deadline action) count as answered for
// RequiredAnswered, not for Answered.
func AnswerProgressOf(req *Request, answers map[string]Answer) AnswerProgress {
	var p AnswerProgress
	for _, d := range req.Data.Decisions {
		p.Total++
		a, ok := answers[d.ID]
		has := ok && a.Answered()
		if d.Required {
			p.Required++
			if has {
				p.RequiredAnswered++
			}
		}
		if has && !a.Defaulted && !a.TimedOut {
			p.Answered++
		}
	}
	return p
}

package webhook

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"

	"github.com/approvalbot/approvalbot/aah"
	"github.com/approvalbot/approvalbot/approval"
	"github.com/approvalbot/approvalbot/store"
)

// Decisions are a reviewer's operations on a request; *approval.Core
// implements them. The API calls the same methods a Slack click does, so
// authorization, sign-off rules and the audit are the same.
type Decisions interface {
	Answer(ctx context.Context, requestID string, by aah.Person, values map[string]any) (approval.Outcome, error)
	AnswerWithComment(ctx context.Context, requestID, decisionID string, by aah.Person, value any, comment string) (approval.Outcome, error)
	Comment(ctx context.Context, requestID, decisionID string, by aah.Person, text string) (approval.Outcome, error)
	SubmitWithComment(ctx context.Context, requestID string, by aah.Person, comment string) (approval.Outcome, error)
	Reject(ctx context.Context, requestID string, decisionIDs []string, by aah.Person, reason string) (approval.Outcome, error)
	RejectAll(ctx context.Context, requestID string, by aah.Person, reason string) (approval.Outcome, error)
	// The review extension's verbs (verbs.go).
	RejectWith(ctx context.Context, requestID string, decisionIDs []string, by aah.Person, r approval.Rejection) (approval.Outcome, error)
	Modify(ctx context.Context, requestID, decisionID string, by aah.Person, edited map[string]any, comment string) (approval.Outcome, error)
	Direct(ctx context.Context, requestID string, by aah.Person, verb aah.Verb, text string) (approval.Outcome, error)
	Reassign(ctx context.Context, requestID string, by aah.Person, to, note string) (approval.Outcome, error)
}

// Decision actions, as Options.Decided is told them (the Slack handlers'
// action ids for the same operations).
const (
	ActionAnswer  = "answer"
	ActionComment = "comment"
	ActionSubmit  = "submit"
	ActionReject  = "reject"
)

// maxDecisionBody bounds the body of a decision endpoint: answers to at most
// 20 decisions and a comment of 3000 characters fit many times over.
const maxDecisionBody = 64 << 10

// registerDecisions mounts the decision endpoints (without Decisions, none).
func (a *API) registerDecisions(mux router) {
	if a.opts.Decisions == nil {
		return
	}
	mux.HandleFunc("POST /v1/requests/{id}/answers", a.decider(ActionAnswer, a.answers))
	mux.HandleFunc("POST /v1/requests/{id}/comments", a.decider(ActionComment, a.comments))
	mux.HandleFunc("POST /v1/requests/{id}/submit", a.decider(ActionSubmit, a.submitDecisions))
	mux.HandleFunc("POST /v1/requests/{id}/reject", a.decider(ActionReject, a.reject))
	a.registerVerbs(mux)
}

// decideFunc reads the body into one Core call; problems with the body
// itself are answered 400 (nothing was called).
type decideFunc func(ctx context.Context, id string, by aah.Person, body json.RawMessage) (approval.Outcome, []aah.FieldError, error)

// decider authenticates who decides: a reviewer token (REVIEWER_TOKENS), or
// an agent's intake token with an approver grant (AGENT_APPROVERS). Others
// are 401 (no such token) or 403 (an agent without a grant).
func (a *API) decider(action string, h decideFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		r, cancel, by, body, ok := a.openDecision(w, r, action)
		if !ok {
			return
		}
		defer cancel()
		ctx := r.Context()
		id := r.PathValue("id")
		out, probs, err := h(ctx, id, by, body)
		if len(probs) > 0 {
			a.opts.Metrics.decision(action, "invalid")
			writeError(w, r, http.StatusBadRequest, "invalid "+action+": "+probs[0].Message, probs...)
			return
		}
		var refusal *approval.Refusal
		switch {
		case errors.As(err, &refusal):
			a.opts.Metrics.decision(action, "refused")
			a.log.InfoContext(ctx, "api decision refused", "action", action, "request_id", id,
				"user", by.ID, "agent", by.Agent, "rule", refusal.Rule)
			writeRefusal(w, r, action, refusal)
			return
		case errors.Is(err, store.ErrNotFound):
			a.opts.Metrics.decision(action, "not_found")
			writeError(w, r, http.StatusNotFound, notFound(id))
			return
		case err != nil:
			result := "error"
			if store.Unavailable(err) {
				result = "unavailable"
			}
			a.opts.Metrics.decision(action, result)
			a.failed(w, r, action, err)
			return
		}
		if !out.Changed {
			a.opts.Metrics.decision(action, "unchanged")
		} else {
			a.opts.Metrics.decision(action, "recorded")
			a.log.InfoContext(ctx, "api decision recorded", "action", action, "request_id", id,
				"user", by.ID, "agent", by.Agent, "status", out.Record.Status, "resolved", out.Resolved)
			a.wakeFor(out.Record.ID)
			if a.opts.Decided != nil {
				a.opts.Decided(action, by, out.Record)
			}
		}
		v := detailOf(out.Record)
		if by.Agent == "" || by.Agent != out.Record.Agent {
			v.Callback = nil // where another agent's responses go is not the decider's business
		}
		writeJSON(w, http.StatusOK, decisionView{Changed: out.Changed, Resolved: out.Resolved, Request: v})
	}
}

// decisionView answers an accepted decision: whether it changed anything
// (false: it repeated the current state), whether it resolved the request,
// and the request now.
type decisionView struct {
	Changed  bool        `json:"changed"`
	Resolved bool        `json:"resolved"`
	Request  requestView `json:"request"`
}

// deciderOf is the person a decision endpoint acts as, or false once it has
// answered 401 or 403. Both credential kinds are checked in constant time.
func (a *API) deciderOf(w http.ResponseWriter, r *http.Request) (aah.Person, bool) {
	user := a.opts.Reviewers.userFor(r)
	agent, err := a.opts.Tokens.agentFor(r, a.opts.AllowAnonymous)
	if user != "" {
		return aah.Person{ID: user, Via: aah.ViaAPI}, true
	}
	if err == nil && agent == AnonymousAgent && a.opts.Tokens.Len() == 0 && r.Header.Get("Authorization") != "" {
		// Local mode takes any call without a token as its anonymous
		// agent; a token nobody has is a mistyped reviewer token, not that.
		err = errUnauthorized
	}
	if err != nil {
		w.Header().Set("WWW-Authenticate", `Bearer realm="approvalbot"`)
		writeError(w, r, http.StatusUnauthorized, "unauthorized: "+err.Error())
		return aah.Person{}, false
	}
	as := a.opts.AgentApprovers[agent]
	if as == "" {
		writeRefused(w, r, http.StatusForbidden, "agent "+quote(agent)+" may not decide requests: "+
			"a reviewer's token (REVIEWER_TOKENS) decides, or the operator grants the agent approval in AGENT_APPROVERS",
			approval.RuleReviewer)
		return aah.Person{}, false
	}
	return aah.Person{ID: as, Name: agent, Agent: agent, Via: aah.ViaAPI}, true
}

// openDecision starts every decision API call: it authenticates the
// decider (401/403 answered here), bounds the call by STORE_TIMEOUT (the
// returned request carries that context; the caller defers cancel), names
// the person from the directory, and reads the body (answered 400/413
// here). ok is false when the call was answered.
func (a *API) openDecision(w http.ResponseWriter, r *http.Request, action string) (_ *http.Request, cancel context.CancelFunc, by aah.Person, body json.RawMessage, ok bool) {
	if by, ok = a.deciderOf(w, r); !ok {
		a.opts.Metrics.decision(action, "unauthorized")
		return r, nil, by, nil, false
	}
	ctx, cancel := context.WithTimeout(r.Context(), a.opts.StoreTimeout)
	r = r.WithContext(ctx)
	if by.Agent == "" && a.opts.Names != nil {
		name, err := a.opts.Names.UserName(ctx, by.ID)
		if err != nil {
			// Best effort: the answer is theirs either way, and the
			// response names them by id.
			a.log.WarnContext(ctx, "could not look up a reviewer's name", "user", by.ID, "err", err)
		}
		by.Name = name
	}
	if body, ok = readDecisionBody(w, r); !ok {
		a.opts.Metrics.decision(action, "invalid")
		cancel()
		return r, nil, by, nil, false
	}
	return r, cancel, by, body, true
}

// readDecisionBody reads a JSON body (an empty one reads as {}).
func readDecisionBody(w http.ResponseWriter, r *http.Request) (json.RawMessage, bool) {
	var body json.RawMessage
	err := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxDecisionBody)).Decode(&body)
	var tooLarge *http.MaxBytesError
	switch {
	case errors.As(err, &tooLarge):
		writeError(w, r, http.StatusRequestEntityTooLarge, "the body exceeds 64 KiB")
		return nil, false
	case err != nil && !errors.Is(err, io.EOF):
		writeError(w, r, http.StatusBadRequest, "the body is not JSON: "+err.Error())
		return nil, false
	case len(body) == 0:
		body = json.RawMessage("{}")
	}
	// A string that is not UTF-8 would be decoded as U+FFFD: a guidance,
	// a parameter or a reason other than the one sent. Refused, as intake
	// refuses it, naming the field.
	var bad *aah.ValidationError
	if err := aah.CheckUnicode(body); errors.As(err, &bad) && len(bad.Problems) > 0 {
		p := bad.Problems[0]
		writeError(w, r, http.StatusBadRequest, "invalid body: "+p.Field+" "+p.Message, bad.Problems...)
		return nil, false
	}
	return body, true
}

// decode reads body strictly into v: a field the endpoint does not know is a
// problem, as is a body that is not an object.
func decode(body json.RawMessage, v any) []aah.FieldError {
	dec := json.NewDecoder(strings.NewReader(string(body)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		msg := strings.TrimPrefix(err.Error(), "json: ")
		return []aah.FieldError{{Field: "body", Message: msg}}
	}
	return nil
}

// answers is POST /v1/requests/{id}/answers: {"answers": {"<decision id>":
// value, ...}, "comment": "..."}; values are typed as in the response
// (approval true/false, choice a string, multi_choice a list, text, number,
// date). A comment goes with a single answer, recorded with it atomically
// (as the input dialog does; a rejection's reason, too).
func (a *API) answers(ctx context.Context, id string, by aah.Person, body json.RawMessage) (approval.Outcome, []aah.FieldError, error) {
	var in struct {
		Answers map[string]any `json:"answers"`
		Comment string         `json:"comment"`
	}
	if probs := decode(body, &in); probs != nil {
		return approval.Outcome{}, probs, nil
	}
	switch {
	case len(in.Answers) == 0:
		return approval.Outcome{}, []aah.FieldError{{Field: "answers", Message: `give at least one answer: {"answers": {"<decision id>": <value>}}`}}, nil
	case len(in.Answers) > 1 && strings.TrimSpace(in.Comment) != "":
		return approval.Outcome{}, []aah.FieldError{{Field: "comment", Message: "a comment belongs to one decision: answer that one alone with it, " +
			"or comment through POST /v1/requests/{id}/comments"}}, nil
	}
	values := make(map[string]any, len(in.Answers))
	for k, v := range in.Answers {
		values[k] = typed(v)
	}
	if strings.TrimSpace(in.Comment) != "" {
		for decision, value := range values {
			out, err := a.opts.Decisions.AnswerWithComment(ctx, id, decision, by, value, in.Comment)
			return out, nil, err
		}
	}
	out, err := a.opts.Decisions.Answer(ctx, id, by, values)
	return out, nil, err
}

// typed converts a JSON list of strings to the []string a multi_choice
// answer is; anything else stays as decoded (the Core checks it).
func typed(v any) any {
	list, ok := v.([]any)
	if !ok {
		return v
	}
	out := make([]string, 0, len(list))
	for _, x := range list {
		s, ok := x.(string)
		if !ok {
			return v
		}
		out = append(out, s)
	}
	return out
}

// comments is POST /v1/requests/{id}/comments: {"decision_id", "text"}; the
// person's one comment on the decision (again replaces it, "" removes it).
func (a *API) comments(ctx context.Context, id string, by aah.Person, body json.RawMessage) (approval.Outcome, []aah.FieldError, error) {
	var in struct {
		DecisionID *string `json:"decision_id"`
		Text       *string `json:"text"`
	}
	if probs := decode(body, &in); probs != nil {
		return approval.Outcome{}, probs, nil
	}
	var probs []aah.FieldError
	if in.DecisionID == nil || *in.DecisionID == "" {
		probs = append(probs, aah.FieldError{Field: "decision_id", Message: "name the decision the comment is on"})
	}
	if in.Text == nil {
		probs = append(probs, aah.FieldError{Field: "text", Message: `is required ("" removes your comment)`})
	}
	if len(probs) > 0 {
		return approval.Outcome{}, probs, nil
	}
	out, err := a.opts.Decisions.Comment(ctx, id, *in.DecisionID, by, *in.Text)
	return out, nil, err
}

// submitDecisions is POST /v1/requests/{id}/submit (body {}, none, or
// {"comment": "..."}): Submit decisions, with the submitter's overall
// comment, which the response carries as data.comment.
func (a *API) submitDecisions(ctx context.Context, id string, by aah.Person, body json.RawMessage) (approval.Outcome, []aah.FieldError, error) {
	var in struct {
		Comment string `json:"comment"`
	}
	if probs := decode(body, &in); probs != nil {
		return approval.Outcome{}, probs, nil
	}
	out, err := a.opts.Decisions.SubmitWithComment(ctx, id, by, in.Comment)
	return out, nil, err
}

// reject is POST /v1/requests/{id}/reject: {"reason", "reject_reason",
// "decision_ids"}; the listed approval decisions, or every one ("Reject
// all") without the list, rejected with the reason as the person's comment
// on each, and reject_reason, one of the reasons the agent offers
// (extensions.decisions reject_reasons), recorded as the reason picked. At
// least one of the two is required.
func (a *API) reject(ctx context.Context, id string, by aah.Person, body json.RawMessage) (approval.Outcome, []aah.FieldError, error) {
	var in struct {
		Reason       string   `json:"reason"`
		RejectReason string   `json:"reject_reason"`
		DecisionIDs  []string `json:"decision_ids"`
	}
	if probs := decode(body, &in); probs != nil {
		return approval.Outcome{}, probs, nil
	}
	if strings.TrimSpace(in.Reason) == "" && strings.TrimSpace(in.RejectReason) == "" {
		return approval.Outcome{}, []aah.FieldError{{Field: "reason", Message: "say why you reject it (reason, or reject_reason picked from the decision's reject_reasons)"}}, nil
	}
	if in.RejectReason != "" {
		out, err := a.opts.Decisions.RejectWith(ctx, id, in.DecisionIDs, by, approval.Rejection{Picked: in.RejectReason, Comment: in.Reason})
		return out, nil, err
	}
	if in.DecisionIDs == nil {
		out, err := a.opts.Decisions.RejectAll(ctx, id, by, in.Reason)
		return out, nil, err
	}
	out, err := a.opts.Decisions.Reject(ctx, id, in.DecisionIDs, by, in.Reason)
	return out, nil, err
}

// writeRefusal answers a refused decision: 409 when the request is closed
// (or Submit finds required decisions unanswered, or the request does not
// accept the verb), 403 when the person may
// not decide it, 404 for a decision the request does not have, 400 for a
// value or comment the decision does not take. Nothing was changed; the
// refusal is audited (click_refused).
func writeRefusal(w http.ResponseWriter, req *http.Request, action string, r *approval.Refusal) {
	status, field := http.StatusBadRequest, r.Field
	switch {
	case r.Rule == approval.RuleClosed || r.Field == approval.FieldRequired || r.Rule == approval.RuleVerb:
		status = http.StatusConflict
	case r.Rule == approval.RuleReviewer || r.Rule == approval.RuleSelfApproval:
		status = http.StatusForbidden
	case r.Field == approval.FieldDecision:
		status = http.StatusNotFound
	case r.Field == "value":
		field = "answers"
	case r.Field == "comment" && action == ActionReject:
		field = "reason"
	default:
		field = verbField(action, field)
	}
	var details []aah.FieldError
	if field != "" {
		details = []aah.FieldError{{Field: field, Message: r.Reason}}
	}
	writeRefused(w, req, status, r.Reason, r.Rule, details...)
}

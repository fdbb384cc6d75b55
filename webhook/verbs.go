package webhook

import (
	"context"
	"encoding/json"
	"strings"

	"github.com/approvalbot/approvalbot/aah"
	"github.com/approvalbot/approvalbot/approval"
)

// The review extension's verbs, as Options.Decided is told them.
const (
	ActionModify     = "modify"
	ActionDefer      = "defer"
	ActionChangePlan = "change_plan"
	ActionAbort      = "abort"
	ActionEscalate   = "escalate"
)

// directiveText is the body field holding each directive's text (seed 001's
// guidance, seed 004's requirement, an abort's reason).
var directiveText = map[string]string{
	ActionDefer:      "guidance",
	ActionChangePlan: "requirement",
	ActionAbort:      "reason",
}

// registerVerbs mounts the endpoints of the reviewer verbs beyond approve
// and reject: modify, defer, change_plan, abort and escalate. They take the
// decision API's credentials and answer like its other endpoints.
func (a *API) registerVerbs(mux router) {
	mux.HandleFunc("POST /v1/requests/{id}/modify", a.decider(ActionModify, a.modify))
	for action := range directiveText {
		mux.HandleFunc("POST /v1/requests/{id}/"+action, a.decider(action, a.directive(action)))
	}
	mux.HandleFunc("POST /v1/requests/{id}/escalate", a.decider(ActionEscalate, a.escalate))
}

// modify is POST /v1/requests/{id}/modify: {"decision_id", "parameters":
// {"<name>": value}, "comment"}; approves the decision with the edited
// parameters (those it declares editable), the comment recorded with it.
func (a *API) modify(ctx context.Context, id string, by aah.Person, body json.RawMessage) (approval.Outcome, []aah.FieldError, error) {
	var in struct {
		DecisionID string         `json:"decision_id"`
		Parameters map[string]any `json:"parameters"`
		Comment    string         `json:"comment"`
	}
	if probs := decode(body, &in); probs != nil {
		return approval.Outcome{}, probs, nil
	}
	var probs []aah.FieldError
	if in.DecisionID == "" {
		probs = append(probs, aah.FieldError{Field: "decision_id", Message: "name the approval decision you modify"})
	}
	if len(in.Parameters) == 0 {
		probs = append(probs, aah.FieldError{Field: "parameters", Message: `give the edited parameters: {"parameters": {"<name>": <value>}}`})
	}
	if len(probs) > 0 {
		return approval.Outcome{}, probs, nil
	}
	out, err := a.opts.Decisions.Modify(ctx, id, in.DecisionID, by, in.Parameters, in.Comment)
	return out, nil, err
}

// directive is POST /v1/requests/{id}/defer {"guidance"}, …/change_plan
// {"requirement"} and …/abort {"reason"}: the request's round ends with the
// directive (Core.Direct).
func (a *API) directive(action string) decideFunc {
	field := directiveText[action]
	return func(ctx context.Context, id string, by aah.Person, body json.RawMessage) (approval.Outcome, []aah.FieldError, error) {
		var in map[string]json.RawMessage
		if probs := decode(body, &in); probs != nil {
			return approval.Outcome{}, probs, nil
		}
		for k := range in {
			if k != field {
				return approval.Outcome{}, []aah.FieldError{{Field: k, Message: "unknown field: " + action + " takes {\"" + field + "\": \"...\"}"}}, nil
			}
		}
		var text string
		if raw, ok := in[field]; ok && json.Unmarshal(raw, &text) != nil {
			return approval.Outcome{}, []aah.FieldError{{Field: field, Message: "must be a string"}}, nil
		}
		if strings.TrimSpace(text) == "" {
			return approval.Outcome{}, []aah.FieldError{{Field: field, Message: "is required: tell the agent what to do instead"}}, nil
		}
		out, err := a.opts.Decisions.Direct(ctx, id, by, aah.Verb(action), text)
		return out, nil, err
	}
}

// escalate is POST /v1/requests/{id}/escalate: {"to", "note"}; hands the
// request to a Slack user, user group, channel or email (Core.Reassign).
func (a *API) escalate(ctx context.Context, id string, by aah.Person, body json.RawMessage) (approval.Outcome, []aah.FieldError, error) {
	var in struct {
		To   string `json:"to"`
		Note string `json:"note"`
	}
	if probs := decode(body, &in); probs != nil {
		return approval.Outcome{}, probs, nil
	}
	if strings.TrimSpace(in.To) == "" {
		return approval.Outcome{}, []aah.FieldError{{Field: "to", Message: "name a Slack user id, user group id, channel or email to escalate to"}}, nil
	}
	out, err := a.opts.Decisions.Reassign(ctx, id, by, in.To, in.Note)
	return out, nil, err
}

// verbField is the body field a verb's refusal is about, from the Core's
// refusal field: an edited parameter is "parameters.<name>", a directive's
// text the field that carried it.
func verbField(action, field string) string {
	switch {
	case strings.HasPrefix(field, approval.FieldParam):
		return "parameters." + strings.TrimPrefix(field, approval.FieldParam)
	case field == approval.FieldText && directiveText[action] != "":
		return directiveText[action]
	}
	return field
}

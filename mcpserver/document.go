package mcpserver

import (
	"encoding/json"
	"maps"
	"strings"
	"time"

	"github.com/approvalbot/approvalbot/client"
)

// The short form of request_decision, turned into the AAH decision request
// it stands for.

// document builds the artifact to submit: the request as given, or the
// short form's.
func (in *RequestDecisionInput) document(now time.Time) ([]byte, error) {
	short := in.Title != "" || in.Context != "" || len(in.Decisions) > 0 || in.ProposedAction != nil || in.Risk != nil ||
		in.Deadline != "" || len(in.Reviewers) > 0 || in.Channel != "" || in.Priority != "" || in.AgentID != "" || in.ID != "" || in.Extensions != nil
	if in.Request != nil {
		if short {
			return nil, fieldError("request", "give either request (a whole artifact) or the short form's fields (title, decisions…), not both")
		}
		b, err := json.Marshal(in.Request)
		if err != nil {
			return nil, fieldError("request", err.Error())
		}
		return b, nil
	}
	if in.Risk != nil && in.ProposedAction == nil {
		return nil, fieldError("risk", "needs proposed_action")
	}
	var deadline time.Time
	if in.Deadline != "" {
		t, err := time.Parse(time.RFC3339, in.Deadline)
		if err != nil {
			return nil, fieldError("deadline", "not an RFC 3339 time (2026-11-26T15:04:05Z)")
		}
		deadline = t
	}
	var r *client.Request
	if pa := in.ProposedAction; pa != nil {
		if len(in.Decisions) > 0 {
			return nil, fieldError("decisions", "give either decisions or proposed_action (a single approval), not both")
		}
		if strings.TrimSpace(pa.Tool) == "" {
			return nil, fieldError("proposed_action.tool_name", "required")
		}
		opts := &client.GateOptions{ID: in.ID, Title: in.Title, Context: in.Context, AgentID: in.AgentID,
			Reviewers: in.Reviewers, Channel: in.Channel, Priority: in.Priority}
		if !deadline.IsZero() {
			opts.Timeout = deadline.Sub(now)
			if opts.Timeout <= 0 {
				return nil, fieldError("deadline", "is in the past")
			}
		}
		var err error
		r, err = client.Action{Tool: pa.Tool, Type: pa.ActionType, Parameters: pa.Parameters, Editable: pa.Editable,
			ExpectedOutcome: pa.ExpectedOutcome, Reversible: pa.Reversible, Cost: pa.EstimatedCost, CostUnit: pa.CostUnit,
			Risk: in.Risk, RejectReasons: pa.RejectReasons, Prompt: pa.Prompt}.Request(opts)
		if err != nil {
			return nil, fieldError("proposed_action", err.Error())
		}
		for k, v := range in.Extensions {
			if _, set := r.Extensions[k]; set {
				return nil, fieldError("extensions."+k, "is set by proposed_action (and reviewers, channel)")
			}
			r.Extensions[k] = v
		}
	} else {
		if strings.TrimSpace(in.Title) == "" {
			return nil, fieldError("title", "required (or give request, a whole artifact)")
		}
		if len(in.Decisions) == 0 {
			return nil, fieldError("decisions", "at least one decision (or give proposed_action for a single approval)")
		}
		r = &client.Request{ID: in.ID, Title: in.Title, Context: in.Context, Decisions: in.Decisions,
			Deadline: deadline, Priority: in.Priority, AgentID: in.AgentID, Extensions: maps.Clone(in.Extensions)}
		if len(in.Reviewers) > 0 || in.Channel != "" {
			slack := map[string]any{}
			if v, ok := r.Extensions["slack"]; ok {
				m, isMap := v.(map[string]any)
				if !isMap {
					return nil, fieldError("extensions.slack", "must be an object")
				}
				slack = maps.Clone(m)
			}
			if len(in.Reviewers) > 0 {
				slack["reviewers"] = in.Reviewers
			}
			if in.Channel != "" {
				slack["channel"] = in.Channel
			}
			if r.Extensions == nil {
				r.Extensions = map[string]any{}
			}
			r.Extensions["slack"] = slack
		}
	}
	if r.ID == "" {
		r.ID = client.NewID()
	}
	return r.Document(now)
}

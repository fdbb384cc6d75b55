package mcpserver

import (
	"cmp"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/approvalbot/approvalbot/aah"
	"github.com/approvalbot/approvalbot/client"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A tool's result: the decision as structured output and as readable text.

// result is a tool's result for the request as it stands: the structured
// output and a readable summary.
func result(v *client.View, waiting string) (*mcp.CallToolResult, DecisionOutput, error) {
	out := DecisionOutput{ID: v.ID, Status: string(v.Status), Open: v.Open(), Permalink: v.Slack.Permalink, Waiting: waiting}
	if len(v.ResponseJSON) > 0 && string(v.ResponseJSON) != "null" {
		_ = json.Unmarshal(v.ResponseJSON, &out.Response)
	}
	var answers []aah.DecisionAnswer
	if r := v.Response; r != nil {
		d := r.Content.Body.Data
		out.OverallStatus, out.Summary, answers = d.OverallStatus, d.Summary, d.Responses
		if d.Directive != nil {
			out.Directive = asMap(d.Directive)
		}
	} else {
		answers = v.Answers
	}
	for _, a := range answers {
		out.Answers = append(out.Answers, asMap(a))
	}
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: summary(v, answers, waiting)}}}, out, nil
}

func asMap(v any) map[string]any {
	b, _ := json.Marshal(v)
	var m map[string]any
	_ = json.Unmarshal(b, &m)
	return m
}

// summary is the readable text of a result: the status, each answer, the
// directive.
func summary(v *client.View, answers []aah.DecisionAnswer, waiting string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Request %s: %s", v.ID, v.Status)
	var dir *aah.ResponseDirective
	if r := v.Response; r != nil {
		fmt.Fprintf(&b, ", overall %s", r.Content.Body.Data.OverallStatus)
		dir = r.Content.Body.Data.Directive
	}
	switch {
	case waiting == "timeout":
		b.WriteString(" (still open: stopped waiting at timeout_seconds; call get_decision with wait=true to wait again)")
	case waiting == "shutdown":
		b.WriteString(" (still open: the server is shutting down; call get_decision with wait=true to wait again)")
	case v.Status == aah.StatusWithdrawn:
		b.WriteString(" (withdrawn: nobody will answer it)")
	case v.Open():
		b.WriteString(" (open: call get_decision to read it later)")
	}
	b.WriteString(".")
	if dir != nil {
		text := cmp.Or(dir.Guidance, dir.Requirement, dir.Reason)
		fmt.Fprintf(&b, "\nDirective: %s by %s", dir.Action, cmp.Or(dir.DecidedBy.Name, dir.DecidedBy.ID))
		if text != "" {
			fmt.Fprintf(&b, ": %q", text)
		}
	}
	for _, a := range answers {
		fmt.Fprintf(&b, "\n- %s: %s", a.DecisionID, answerText(a))
	}
	if r := v.Response; r != nil && r.Content.Body.Data.Summary != "" {
		fmt.Fprintf(&b, "\nSummary: %s", r.Content.Body.Data.Summary)
	}
	if v.Slack.Permalink != "" {
		fmt.Fprintf(&b, "\nSlack: %s", v.Slack.Permalink)
	}
	return b.String()
}

func answerText(a aah.DecisionAnswer) string {
	var b strings.Builder
	switch {
	case a.Approved != nil && *a.Approved && a.Modified:
		p, _ := json.Marshal(a.Parameters)
		fmt.Fprintf(&b, "approved with modified parameters %s", p)
	case a.Approved != nil:
		b.WriteString(valueText(*a.Approved))
	case a.Selected != nil:
		b.WriteString("selected " + valueText(a.Selected))
	case a.Value != nil:
		b.WriteString(valueText(a.Value))
	default:
		b.WriteString("not answered")
	}
	if a.DecidedBy != nil {
		fmt.Fprintf(&b, " by %s", cmp.Or(a.DecidedBy.Name, a.DecidedBy.ID))
	}
	switch {
	case a.TimedOut:
		b.WriteString(" (at the deadline)")
	case a.Defaulted:
		b.WriteString(" (default)")
	}
	if a.RejectReason != "" {
		fmt.Fprintf(&b, ", reason %q", a.RejectReason)
	}
	if a.Comment != nil && *a.Comment != "" {
		fmt.Fprintf(&b, ", comment %q", *a.Comment)
	}
	return b.String()
}

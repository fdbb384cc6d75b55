// Package mcpserver serves approvalbot as Model Context Protocol tools, so
// that agents built on MCP clients ask humans through it without any code of
// their own:
//
//   - request_decision submits a decision request (a whole AAH
//     decision/request artifact, or a short form) and by default waits for
//     its outcome, sending a progress notification for every answer,
//     escalation and reminder on the way; with wait=false it returns the id
//     at once.
//   - get_decision reads a request (and may wait for it to close).
//   - withdraw_decision withdraws an open request.
//
// The tools are built on the Go client (package client) and call the bot's
// /v1 API with the caller's intake token, so every rule of /v1 applies
// unchanged: authentication, the per-agent rate and open-request limits,
// validation errors that name the field. Two transports serve them: stdio
// (approvalbot mcp, a client of a bot at APPROVALBOT_URL with
// APPROVALBOT_TOKEN) and streamable HTTP (Handler, mounted at /mcp on the
// bot's own listener, its tools reaching the same process's /v1 in memory).
package mcpserver

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/approvalbot/approvalbot/aah"
	"github.com/approvalbot/approvalbot/client"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// ClientFunc returns the client a tool call talks to the bot with (the
// HTTP transport's carries the caller's token).
type ClientFunc func(ctx context.Context, req *mcp.CallToolRequest) (*client.Client, error)

// Options configure the server.
type Options struct {
	// Version is the server's version in its MCP implementation info.
	Version string
	// Done, when closed, ends every wait of a tool at once: the call
	// returns the request as it stands (still open), so the bot can shut
	// down without waiting for reviewers. Nil: never.
	Done <-chan struct{}
}

// New returns the MCP server with approvalbot's three tools.
func New(clientFor ClientFunc, opts *Options) *mcp.Server {
	var o Options
	if opts != nil {
		o = *opts
	}
	s := mcp.NewServer(&mcp.Implementation{Name: "approvalbot", Title: "approvalbot: human decisions through Slack",
		Version: cmp.Or(o.Version, "dev")}, &mcp.ServerOptions{
		Instructions: "Ask humans to decide before you act. request_decision posts a decision request to reviewers " +
			"in Slack and, by default, waits for their answer (progress notifications report each answer); " +
			"act only on the outcome it returns. With wait=false it returns the request's id: read it later " +
			"with get_decision, withdraw it with withdraw_decision if you no longer need it.",
	})
	t := &tools{clientFor: clientFor, done: o.Done}
	mcp.AddTool(s, &mcp.Tool{
		Name:  "request_decision",
		Title: "Ask humans for a decision",
		Description: "Submit a decision request to human reviewers (posted to Slack) and, unless wait is false, " +
			"wait for their decision, sending a progress notification for each answer, escalation and reminder. " +
			"Give either `request` (a whole AAH decision/request artifact) or the short form: `title`, `context` " +
			"and `decisions`, or `proposed_action` (and `risk`) for a single approval of one action. The result " +
			"is the request's status and, once decided, the decision response: overall status, each answer, " +
			"and a directive (defer, change_plan, abort) when the reviewer gave one instead.",
		Annotations: &mcp.ToolAnnotations{OpenWorldHint: new(true)},
	}, t.requestDecision)
	mcp.AddTool(s, &mcp.Tool{
		Name:        "get_decision",
		Title:       "Read a decision request",
		Description: "Read a decision request by id: its status, the answers so far while it is open, and the decision response once it is closed. With wait=true, wait until it closes (or timeout_seconds pass).",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: new(true)},
	}, t.getDecision)
	mcp.AddTool(s, &mcp.Tool{
		Name:        "withdraw_decision",
		Title:       "Withdraw a decision request",
		Description: "Withdraw an open decision request the agent no longer needs: its Slack message loses its controls. A request already closed cannot be withdrawn (an error saying so).",
		Annotations: &mcp.ToolAnnotations{DestructiveHint: new(false), IdempotentHint: true, OpenWorldHint: new(true)},
	}, t.withdrawDecision)
	return s
}

// RequestDecisionInput is request_decision's arguments.
type RequestDecisionInput struct {
	Request map[string]any `json:"request,omitempty" jsonschema:"a whole AAH decision/request artifact (aah_version, artifact, source, content, handoff, lifecycle, extensions), sent as is; instead of the short form"`

	ID             string            `json:"id,omitempty" jsonschema:"the request id (artifact.id) of the short form; default: generated"`
	Title          string            `json:"title,omitempty" jsonschema:"short form: the request's title"`
	Context        string            `json:"context,omitempty" jsonschema:"short form: what reviewers read first: why you ask"`
	Decisions      []client.Decision `json:"decisions,omitempty" jsonschema:"short form: the decisions (id, type approval|choice|multi_choice|text|number|date, prompt, required, options for choices, default)"`
	ProposedAction *ProposedAction   `json:"proposed_action,omitempty" jsonschema:"short form for a single approval of one action (instead of decisions): reviewers approve, reject, modify the editable parameters, defer, change the plan, escalate or abort"`
	Risk           *client.Risk      `json:"risk,omitempty" jsonschema:"the risk assessment of proposed_action"`
	Deadline       string            `json:"deadline,omitempty" jsonschema:"short form: when reviewers must have decided (RFC 3339); with proposed_action default 5 minutes from now, then rejected"`
	Reviewers      []string          `json:"reviewers,omitempty" jsonschema:"short form: who decides (Slack user ids or emails); default the bot's default reviewers"`
	Channel        string            `json:"channel,omitempty" jsonschema:"short form: the Slack channel to post in; default the bot's"`
	Priority       string            `json:"priority,omitempty" jsonschema:"short form: low, normal, medium, high, urgent or critical"`
	AgentID        string            `json:"agent_id,omitempty" jsonschema:"short form: source.agent_id, who asks; default agent"`
	Extensions     map[string]any    `json:"extensions,omitempty" jsonschema:"short form: the artifact's extensions, verbatim (slack: reviewers, quorum, required_roles…; decisions: per-decision review verbs, proposed actions; on_deadline; events)"`

	Wait             *bool   `json:"wait,omitempty" jsonschema:"wait for the decision (default true); false returns the id at once"`
	TimeoutSeconds   float64 `json:"timeout_seconds,omitempty" jsonschema:"stop waiting after this many seconds and return the request as it stands (it stays open); default: wait until it closes"`
	WithdrawOnCancel bool    `json:"withdraw_on_cancel,omitempty" jsonschema:"withdraw the request when this call is cancelled while waiting (default false: it stays open)"`
}

// ProposedAction is the action a single-approval request asks about (seed
// 001 §2.3), as client.Action builds it.
type ProposedAction struct {
	Tool            string                  `json:"tool_name" jsonschema:"the tool you would call"`
	ActionType      string                  `json:"action_type,omitempty" jsonschema:"tool_call (default), plan, response or your own"`
	Parameters      map[string]any          `json:"parameters,omitempty" jsonschema:"the call's arguments as you propose them"`
	Editable        map[string]client.Param `json:"editable,omitempty" jsonschema:"parameters a reviewer may change before approving, with their type (string, number, integer, boolean) and bounds"`
	ExpectedOutcome string                  `json:"expected_outcome,omitempty"`
	Reversible      *bool                   `json:"reversible,omitempty" jsonschema:"false marks an irreversible action"`
	EstimatedCost   float64                 `json:"estimated_cost,omitempty"`
	CostUnit        string                  `json:"cost_unit,omitempty"`
	Prompt          string                  `json:"prompt,omitempty" jsonschema:"the question; default Run <tool_name>?"`
	RejectReasons   []string                `json:"reject_reasons,omitempty" jsonschema:"reasons a reviewer who rejects may pick"`
}

// GetDecisionInput is get_decision's arguments.
type GetDecisionInput struct {
	ID             string  `json:"id" jsonschema:"the request id"`
	Wait           bool    `json:"wait,omitempty" jsonschema:"wait until the request closes (default false: read it now)"`
	TimeoutSeconds float64 `json:"timeout_seconds,omitempty" jsonschema:"with wait: stop waiting after this many seconds"`
}

// WithdrawDecisionInput is withdraw_decision's arguments.
type WithdrawDecisionInput struct {
	ID string `json:"id" jsonschema:"the request id"`
}

// DecisionOutput is every tool's result: the request as it stands.
type DecisionOutput struct {
	ID string `json:"id"`
	// Status is the request's lifecycle state: pending, partial,
	// escalated (open), resolved, expired, withdrawn (closed).
	Status string `json:"status"`
	Open   bool   `json:"open"`
	// OverallStatus is the response's overall_status (all_approved,
	// all_rejected, partial, pending), once closed with a response.
	OverallStatus string `json:"overall_status,omitempty"`
	// Summary is the response's one-line summary.
	Summary string `json:"summary,omitempty"`
	// Directive is what the reviewer told the agent instead of answering
	// (action defer, change_plan or abort, with guidance, requirement or
	// reason).
	Directive map[string]any `json:"directive,omitempty"`
	// Answers are the decision response's answers once closed, the
	// answers so far while open.
	Answers []map[string]any `json:"answers,omitempty"`
	// Response is the whole decision response artifact, once closed.
	Response map[string]any `json:"response,omitempty"`
	// Permalink is the Slack message.
	Permalink string `json:"permalink,omitempty"`
	// Waiting says why a wait ended with the request still open
	// (timeout, shutdown); absent otherwise.
	Waiting string `json:"waiting,omitempty"`
}

type tools struct {
	clientFor ClientFunc
	done      <-chan struct{}
}

// fieldError is a tool error about one argument.
func fieldError(field, msg string) error { return fmt.Errorf("invalid arguments: %s: %s", field, msg) }

func (t *tools) requestDecision(ctx context.Context, req *mcp.CallToolRequest, in RequestDecisionInput) (*mcp.CallToolResult, DecisionOutput, error) {
	// As /v1 refuses it: in was decoded with U+FFFD for what is not
	// well-formed Unicode, and would reach /v1 as clean, other text. The
	// arguments as sent (HTTP and stdio alike) still hold it.
	if req.Params != nil {
		if err := aah.CheckUnicode(req.Params.Arguments); err != nil {
			return nil, DecisionOutput{}, fieldError("arguments", err.Error())
		}
	}
	c, err := t.clientFor(ctx, req)
	if err != nil {
		return nil, DecisionOutput{}, err
	}
	doc, err := in.document(time.Now())
	if err != nil {
		return nil, DecisionOutput{}, err
	}
	if in.TimeoutSeconds < 0 {
		return nil, DecisionOutput{}, fieldError("timeout_seconds", "must not be negative")
	}
	// The id is fixed before the submission, so that a call cancelled
	// while it is in flight can still withdraw what the bot stored.
	doc, id, err := client.WithID(doc)
	if err != nil {
		return nil, DecisionOutput{}, fieldError("request", err.Error())
	}
	sub, err := c.SubmitJSON(ctx, doc)
	if err != nil {
		if ctx.Err() != nil && in.WithdrawOnCancel && id != "" {
			t.withdrawCancelled(ctx, c, id)
		}
		return nil, DecisionOutput{}, toolError(err)
	}
	if in.Wait != nil && !*in.Wait {
		view := sub.View
		if view == nil {
			view = &client.View{ID: sub.ID, Status: sub.Status}
		}
		return result(view, "")
	}
	if sub.View != nil && !sub.View.Open() {
		return result(sub.View, "")
	}
	view, waiting, err := t.wait(ctx, req, c, sub.ID, in.TimeoutSeconds)
	if err != nil && ctx.Err() != nil && in.WithdrawOnCancel && t.withdrawCancelled(ctx, c, sub.ID) {
		return nil, DecisionOutput{}, fmt.Errorf("request %s: the call was cancelled and the request withdrawn", sub.ID)
	}
	if err != nil {
		return nil, DecisionOutput{}, toolError(err)
	}
	return result(view, waiting)
}

// withdrawCancelled withdraws the request of a call cancelled with
// withdraw_on_cancel (a 404 for one never stored is fine); true when it
// did.
func (t *tools) withdrawCancelled(ctx context.Context, c *client.Client, id string) bool {
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	_, err := c.Withdraw(wctx, id)
	return err == nil
}

func (t *tools) getDecision(ctx context.Context, req *mcp.CallToolRequest, in GetDecisionInput) (*mcp.CallToolResult, DecisionOutput, error) {
	if strings.TrimSpace(in.ID) == "" {
		return nil, DecisionOutput{}, fieldError("id", "required")
	}
	if in.TimeoutSeconds < 0 {
		return nil, DecisionOutput{}, fieldError("timeout_seconds", "must not be negative")
	}
	c, err := t.clientFor(ctx, req)
	if err != nil {
		return nil, DecisionOutput{}, err
	}
	view, err := c.Get(ctx, in.ID)
	if err != nil {
		return nil, DecisionOutput{}, toolError(err)
	}
	waiting := ""
	if in.Wait && view.Open() {
		if view, waiting, err = t.wait(ctx, req, c, in.ID, in.TimeoutSeconds); err != nil {
			return nil, DecisionOutput{}, toolError(err)
		}
	}
	return result(view, waiting)
}

func (t *tools) withdrawDecision(ctx context.Context, req *mcp.CallToolRequest, in WithdrawDecisionInput) (*mcp.CallToolResult, DecisionOutput, error) {
	if strings.TrimSpace(in.ID) == "" {
		return nil, DecisionOutput{}, fieldError("id", "required")
	}
	c, err := t.clientFor(ctx, req)
	if err != nil {
		return nil, DecisionOutput{}, err
	}
	view, err := c.Withdraw(ctx, in.ID)
	if err != nil {
		return nil, DecisionOutput{}, toolError(err)
	}
	return result(view, "")
}

// wait follows the request's event stream until it closes, notifying the
// caller's progress token of every answer, escalation and reminder. A wait
// that ends by timeout or at shutdown returns the request as it stands, and
// why in waiting; the caller's cancellation is an error.
func (t *tools) wait(ctx context.Context, req *mcp.CallToolRequest, c *client.Client, id string, timeoutSeconds float64) (*client.View, string, error) {
	wctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	errTimeout, errShutdown := errors.New("timeout"), errors.New("shutdown")
	if timeoutSeconds > 0 {
		tm := time.AfterFunc(time.Duration(timeoutSeconds*float64(time.Second)), func() { cancel(errTimeout) })
		defer tm.Stop()
	}
	if t.done != nil {
		stop := make(chan struct{})
		defer close(stop)
		go func() {
			select {
			case <-t.done:
				cancel(errShutdown)
			case <-stop:
			}
		}()
	}
	token := req.Params.GetProgressToken()
	n := 0
	view, err := c.WaitEvents(wctx, id, func(e client.Event) {
		msg, ok := progressMessage(e)
		if !ok || token == nil {
			return
		}
		n++
		_ = req.Session.NotifyProgress(wctx, &mcp.ProgressNotificationParams{ProgressToken: token,
			Progress: float64(n), Message: msg})
	})
	if err == nil {
		return view, "", nil
	}
	if ctx.Err() != nil {
		return nil, "", ctx.Err()
	}
	cause := context.Cause(wctx)
	if cause != errTimeout && cause != errShutdown {
		return nil, "", err
	}
	// Read it as it stands, whatever ended the wait.
	rctx, rcancel := context.WithTimeout(ctx, 10*time.Second)
	defer rcancel()
	view, gerr := c.Get(rctx, id)
	if gerr != nil {
		return nil, "", gerr
	}
	if !view.Open() {
		return view, "", nil
	}
	return view, cause.Error(), nil
}

// progressMessage describes a progress event, for the events that are
// progress (an answer, an escalation, a reminder).
func progressMessage(e client.Event) (string, bool) {
	var d struct {
		Actor  any `json:"actor"` // "human:U0ALICE"
		Answer struct {
			By any `json:"by"` // the person, with their name
		} `json:"answer"`
		DecisionID string `json:"decision_id"`
		Value      any    `json:"value"`
		Step       any    `json:"step"`
		To         any    `json:"to"`
		N          int    `json:"n"`
	}
	_ = json.Unmarshal(e.Data, &d)
	switch e.Type {
	case "input:received":
		who := cmp.Or(personName(d.Answer.By), personName(d.Actor))
		return fmt.Sprintf("input:received: %s answered %s: %s", cmp.Or(who, "a reviewer"), d.DecisionID, valueText(d.Value)), true
	case "escalated":
		return fmt.Sprintf("escalated to %s", cmp.Or(valueText(d.To), "the next reviewers")), true
	case "reminded":
		return fmt.Sprintf("reminded: reviewers reminded (reminder %d)", d.N), true
	}
	return "", false
}

// personName reads a person (an object with name/id, or a string).
func personName(v any) string {
	switch p := v.(type) {
	case string:
		return p
	case map[string]any:
		name, _ := p["name"].(string)
		id, _ := p["id"].(string)
		return cmp.Or(name, id)
	}
	return ""
}

func valueText(v any) string {
	switch x := v.(type) {
	case nil:
		return "(none)"
	case string:
		return x
	case bool:
		if x {
			return "approved"
		}
		return "rejected"
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// toolError is the error a tool returns for a client error: the bot's
// refusal as it said it, each offending field named.
func toolError(err error) error {
	var ae *client.APIError
	if errors.As(err, &ae) {
		var b strings.Builder
		fmt.Fprintf(&b, "approvalbot refused (%d %s)", ae.Status, ae.Code)
		if ae.Message != "" {
			b.WriteString(": " + ae.Message)
		}
		for _, d := range ae.Details {
			fmt.Fprintf(&b, "\n- %s: %s", d.Field, d.Message)
		}
		if ae.Field != "" && len(ae.Details) == 0 {
			fmt.Fprintf(&b, " (field %s)", ae.Field)
		}
		if ae.RetryAfter > 0 {
			fmt.Fprintf(&b, " (retry after %s)", ae.RetryAfter)
		}
		return errors.New(b.String())
	}
	return err
}

// ForClient returns the MCP server whose tools all talk through c (the
// stdio server of approvalbot mcp: one agent, one token).
func ForClient(c *client.Client, opts *Options) *mcp.Server {
	return New(func(context.Context, *mcp.CallToolRequest) (*client.Client, error) { return c, nil }, opts)
}

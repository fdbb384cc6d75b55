package aah

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"
)

// ParseOptions tune the checks that depend on the caller's situation.
type ParseOptions struct {
	// Now is the time deadlines are compared against.
	Now time.Time
	// AllowInsecureCallbacks permits http:// response URLs (local development).
	AllowInsecureCallbacks bool
	// Stored says the document was validated at intake and is being read
	// back: checks that depend on when it is read (a deadline that has since
	// passed) or on the intake's settings are skipped.
	Stored bool
	// Defaults are the workspace's sign-off rules, for the check that a
	// quorum can be met (skipped when Stored: the settings may have changed).
	Defaults Defaults
}

// Parse decodes and validates a decision/request document. It reports every
// problem it finds, not just the first, as a *ValidationError. Unknown fields
// are ignored here; callers keep the raw document to preserve them. Text that
// is not well-formed Unicode is refused (CheckUnicode) unless opts.Stored.
func Parse(raw []byte, opts ParseOptions) (*Request, error) {
	doc, err := Decode(raw)
	if err != nil {
		return nil, err
	}
	if !opts.Stored { // a stored document passed at intake, or predates the check: still readable
		if err := CheckUnicode(raw); err != nil {
			return nil, err
		}
	}
	return ParseDecoded(doc, opts)
}

// ParseDecoded validates a document Decode returned; see Parse.
func ParseDecoded(doc any, opts ParseOptions) (*Request, error) {
	ps := pathStepsPool.Get().(*pathSteps)
	p := &parser{opts: opts, paths: *ps}
	defer func() {
		*ps = p.paths // grown by the walk: the pool keeps the larger one (also after a panic)
		if cap(*ps) <= maxPooledPathSteps {
			clear(*ps) // the names are the document's strings: keep none alive
			*ps = (*ps)[:0]
			pathStepsPool.Put(ps)
		}
	}()
	if p.opts.Now.IsZero() {
		p.opts.Now = time.Now()
	}
	req := p.request(node{paths: &p.paths, at: -1, v: doc})
	if len(p.problems) > 0 {
		return nil, &ValidationError{Problems: p.problems}
	}
	return req, nil
}

// pathStepsPool holds the steps of parses done (a few KB each, a tenth
// of intake's allocated bytes when made anew): no node outlives its parse,
// so its steps are free once ParseDecoded returns.
var pathStepsPool = sync.Pool{New: func() any { ps := make(pathSteps, 0, 128); return &ps }}

// maxPooledPathSteps is the most steps a pooled slice keeps: one grown by a
// rare huge document is left to the collector.
const maxPooledPathSteps = 4096

// parser accumulates problems while it walks a document.
type parser struct {
	opts     ParseOptions
	problems []FieldError
	paths    pathSteps
}

func (p *parser) fail(n node, format string, args ...any) {
	p.problems = append(p.problems, FieldError{Field: n.path(), Message: fmt.Sprintf(format, args...)})
}

func typeName(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "a boolean"
	case json.Number:
		return "a number"
	case string:
		return "a string"
	case []any:
		return "an array"
	case map[string]any:
		return "an object"
	}
	return fmt.Sprintf("%T", v)
}

// object returns the node's object; required objects that are absent fail.
func (p *parser) object(n node, required bool) bool {
	if n.absent() {
		if required {
			p.fail(n, "is required")
		}
		return false
	}
	if _, ok := n.v.(map[string]any); !ok {
		p.fail(n, "must be an object, got %s", typeName(n.v))
		return false
	}
	return true
}

func (p *parser) array(n node) []any {
	if n.absent() {
		return nil
	}
	a, ok := n.v.([]any)
	if !ok {
		p.fail(n, "must be an array, got %s", typeName(n.v))
	}
	return a
}

// str returns the node's string. Required strings must be non-blank.
func (p *parser) str(n node, required bool) string {
	if n.absent() {
		if required {
			p.fail(n, "is required")
		}
		return ""
	}
	s, ok := n.v.(string)
	if !ok {
		p.fail(n, "must be a string, got %s", typeName(n.v))
		return ""
	}
	if required && strings.TrimSpace(s) == "" {
		p.fail(n, "must not be empty")
		return "" // reported once: follow-up checks see an absent value
	}
	return s
}

func (p *parser) boolean(n node) *bool {
	if n.absent() {
		return nil
	}
	b, ok := n.v.(bool)
	if !ok {
		p.fail(n, "must be true or false, got %s", typeName(n.v))
		return nil
	}
	return &b
}

func (p *parser) number(n node) *float64 {
	if n.absent() {
		return nil
	}
	num, ok := n.v.(json.Number)
	if !ok {
		p.fail(n, "must be a number, got %s", typeName(n.v))
		return nil
	}
	f, err := strconv.ParseFloat(string(num), 64)
	if err != nil {
		p.fail(n, "must be a finite number: %v", err)
		return nil
	}
	return &f
}

// timestamp parses an ISO 8601 date-time with a zone, as RFC 3339 writes it.
func (p *parser) timestamp(n node) time.Time {
	s := p.str(n, false)
	if s == "" {
		return time.Time{}
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	// A stored document was checked when it came in, perhaps before the
	// stricter form was: it still reads.
	if err != nil || (!p.opts.Stored && !IsRFC3339(s)) {
		p.fail(n, "must be an ISO 8601 date-time with a time zone, e.g. 2026-02-17T17:00:00Z, written as RFC 3339 does (two-digit months, days and hours)")
		return time.Time{}
	}
	return t
}

func (p *parser) request(root node) *Request {
	if !p.object(root, true) {
		if root.absent() {
			p.problems = []FieldError{{Field: "", Message: "body must be a JSON object"}}
		}
		return nil
	}
	r := &Request{}
	r.AAHVersion = p.str(root.field("aah_version"), true)
	if r.AAHVersion != "" && !strings.HasPrefix(r.AAHVersion, "0.") {
		p.fail(root.field("aah_version"), "unsupported AAH version %q; this server speaks 0.x", r.AAHVersion)
	}
	p.artifact(root.field("artifact"), r)
	p.source(root.field("source"), r)
	p.content(root.field("content"), r)
	p.handoff(root.field("handoff"), r)
	if lc := root.field("lifecycle"); p.object(lc, false) {
		r.Lifecycle.Status = p.str(lc.field("status"), false)
		r.Lifecycle.Visibility = p.str(lc.field("visibility"), false)
		if r.Lifecycle.Status != "" && Status(r.Lifecycle.Status) != StatusPending {
			p.fail(lc.field("status"), "a new request must be %q, got %q", StatusPending, r.Lifecycle.Status)
		}
	}
	r.OnDeadline = DeadlineExpire
	if ext := root.field("extensions"); p.object(ext, false) {
		p.slackHints(ext.field("slack"), r)
		p.eventSubscription(ext.field("events"), r)
		p.reviews(ext.field("decisions"), r)
		if od := ext.field("on_deadline"); !od.absent() {
			switch a := DeadlineAction(p.str(od, true)); a {
			case DeadlineExpire, DeadlineApplyDefaults, DeadlineReject, DeadlineApprove:
				r.OnDeadline = a
			case "":
			default:
				p.fail(od, "must be expire, apply_defaults, reject or approve; got %q", a)
			}
		}
	}
	return r
}

func (p *parser) artifact(n node, r *Request) {
	if !p.object(n, true) {
		return
	}
	idNode := n.field("id")
	r.Artifact.ID = p.str(idNode, false)
	if id, isString := idNode.v.(string); isString && id == "" {
		p.fail(idNode, "must not be empty; omit it to have one generated")
	} else if r.Artifact.ID != "" && !isRequestID(r.Artifact.ID) {
		p.fail(idNode, "must be 1-128 characters of letters, digits and _ . : - starting with a letter or digit")
	}
	r.Artifact.Type = p.str(n.field("type"), true)
	if r.Artifact.Type != "" && r.Artifact.Type != ArtifactTypeRequest {
		p.fail(n.field("type"), "must be %q, got %q", ArtifactTypeRequest, r.Artifact.Type)
	}
	r.Artifact.Title = p.str(n.field("title"), true)
	r.Artifact.CreatedAt = p.timestamp(n.field("created_at"))
}

func (p *parser) source(n node, r *Request) {
	if !p.object(n, true) {
		return
	}
	r.Source.AgentID = p.str(n.field("agent_id"), true)
	r.Source.AgentName = p.str(n.field("agent_name"), false)
	r.Source.AgentRole = p.str(n.field("agent_role"), false)
	r.Source.TaskID = p.str(n.field("task_id"), false)
}

func (p *parser) content(n node, r *Request) {
	if !p.object(n, true) {
		return
	}
	if mt := p.str(n.field("media_type"), false); mt != "" && mt != MediaTypeRequest {
		p.fail(n.field("media_type"), "must be %q, got %q", MediaTypeRequest, mt)
	}
	body := n.field("body")
	if !p.object(body, true) {
		return
	}
	if s := p.str(body.field("schema"), true); s != "" && s != SchemaRequest {
		p.fail(body.field("schema"), "must be %q, got %q", SchemaRequest, s)
	}
	data := body.field("data")
	if !p.object(data, true) {
		return
	}
	p.data(data, r)
}

func (p *parser) data(n node, r *Request) {
	d := &r.Data
	d.Context = p.str(n.field("context"), false)
	decisions := n.field("decisions")
	items := p.array(decisions)
	if decisions.absent() {
		p.fail(decisions, "is required")
	} else if items != nil && len(items) == 0 {
		p.fail(decisions, "must hold at least one decision")
	}
	seen := map[string]int{}
	for i := range items {
		dn := decisions.index(i)
		dec, ok := p.decision(dn)
		if !ok {
			continue
		}
		if first, dup := seen[dec.ID]; dup && dec.ID != "" {
			p.fail(dn.field("id"), "duplicates the id of decisions[%d] (%q); ids must be unique within a request", first, dec.ID)
		} else {
			seen[dec.ID] = i
		}
		d.Decisions = append(d.Decisions, dec)
	}
	blocking := n.field("blocking")
	for i := range p.array(blocking) {
		bn := blocking.index(i)
		if !p.object(bn, true) {
			continue
		}
		d.Blocking = append(d.Blocking, BlockingItem{
			TaskID:      p.str(bn.field("task_id"), false),
			ArtifactID:  p.str(bn.field("artifact_id"), false),
			Description: p.str(bn.field("description"), true),
		})
	}
	d.Deadline = p.futureTimestamp(n.field("deadline"))
	p.escalation(n.field("escalation"), r)
}

// futureTimestamp parses a deadline, which must not already have passed.
func (p *parser) futureTimestamp(n node) time.Time {
	t := p.timestamp(n)
	if !t.IsZero() && !p.opts.Stored && !t.After(p.opts.Now) {
		p.fail(n, "is in the past (%s); a deadline must be in the future", t.UTC().Format(time.RFC3339))
	}
	return t
}

func (p *parser) escalation(n node, r *Request) {
	if n.absent() {
		return
	}
	var steps []node
	switch n.v.(type) {
	case map[string]any:
		steps = []node{n}
	case []any:
		for i := range p.array(n) {
			steps = append(steps, n.index(i))
		}
		if len(steps) == 0 {
			p.fail(n, "must hold at least one step when it is a list")
		}
	default:
		p.fail(n, "must be an object {after, to} or a list of them, got %s", typeName(n.v))
		return
	}
	var prev time.Duration
	for _, sn := range steps {
		if !p.object(sn, true) {
			continue
		}
		step := EscalationStep{AfterRaw: p.str(sn.field("after"), true), To: p.str(sn.field("to"), true)}
		if step.To != "" && !p.opts.Stored && !ValidEscalationTarget(step.To) {
			// Stored requests were accepted before this check: they still
			// read, and their escalation records why the step failed.
			p.fail(sn.field("to"), "%q is not a target approvalbot can escalate to; use %s", step.To, EscalationTargetForms)
		}
		if step.AfterRaw != "" {
			d, err := ParseDuration(step.AfterRaw)
			if err != nil {
				p.fail(sn.field("after"), "%v", err)
			} else if d <= prev {
				p.fail(sn.field("after"), "must be later than the previous step (%s)", prev)
			} else {
				step.After, prev = d, d
			}
		}
		r.Data.Escalation = append(r.Data.Escalation, step)
	}
}

// EscalationTargetForms lists the forms of data.escalation[].to that
// escalation resolves (see approval.ResolveTarget).
const EscalationTargetForms = "a Slack user id (U…/W…), an email address of a Slack user, " +
	"a Slack user group id (S…), a channel id (C…/G…) or a channel name (#approvals)"

// ValidEscalationTarget reports whether to has one of the forms escalation
// resolves (EscalationTargetForms). Whether it names someone is only known
// when the step runs.
func ValidEscalationTarget(to string) bool {
	to = strings.TrimSpace(to)
	return IsSlackUserID(to) || looksLikeEmail(to) || isUserGroup(to) ||
		isChannelID(to) || isChannelName(to)
}

func (p *parser) handoff(n node, r *Request) {
	if !p.object(n, false) {
		return
	}
	h := &r.Handoff
	tn := n.field("target_role")
	h.TargetRole = p.str(tn, false)
	if h.TargetRole != "" && h.TargetRole != TargetRoleHuman && !p.opts.Stored {
		p.fail(tn, "must be %q: approvalbot hands decisions to people in Slack; got %q", TargetRoleHuman, h.TargetRole)
	}
	h.ExpectsResponse = p.boolean(n.field("expects_response"))
	h.ResponseDeadline = p.futureTimestamp(n.field("response_deadline"))
	// Any priority is accepted (the spec gives "high" as an example, not a
	// list); Slack shows low, normal, medium, high, urgent and critical with
	// a badge and others as text.
	h.Priority = p.str(n.field("priority"), false)
	p.parentArtifactIDs(n.field("parent_artifact_ids"), h)
	un := n.field("response_url")
	h.ResponseURL = p.str(un, false)
	if h.ResponseURL != "" {
		if err := checkCallbackURL(h.ResponseURL, p.opts.AllowInsecureCallbacks || p.opts.Stored); err != nil {
			p.fail(un, "%v", err)
		}
	}
}

func (p *parser) slackHints(n node, r *Request) {
	if !p.object(n, false) {
		return
	}
	cn := n.field("channel")
	r.Slack.Channel = p.str(cn, false)
	if r.Slack.Channel != "" && !isSlackChannel(r.Slack.Channel) {
		p.fail(cn, "must be a Slack channel id (C…, G…, D…) or a channel name like #approvals")
	}
	if rem := n.field("reminders"); p.object(rem, false) {
		plan := &ReminderPlan{}
		if every := p.str(rem.field("every"), true); every != "" {
			d, err := ParseDuration(every)
			switch {
			case err != nil:
				p.fail(rem.field("every"), "%v", err)
			case d < time.Minute:
				p.fail(rem.field("every"), "must be at least 1m: reminders are for people")
			default:
				plan.Every = d
			}
		}
		if max := p.number(rem.field("max")); max != nil {
			if *max < 0 || *max > MaxReminders || *max != float64(int(*max)) {
				p.fail(rem.field("max"), "must be a whole number from 0 to %d", MaxReminders)
			} else {
				plan.Max = int(*max)
			}
		} else if rem.field("max").absent() {
			p.fail(rem.field("max"), "is required (0 turns reminders off)")
		}
		r.Slack.Reminders = plan
	}
	rn := n.field("reviewers")
	reviewers := p.array(rn)
	if len(reviewers) > MaxReviewers {
		p.fail(rn, "lists %d reviewers; at most %d can be mentioned", len(reviewers), MaxReviewers)
	}
	seen := map[string]bool{}
	for i := range reviewers {
		en := rn.index(i)
		s := p.str(en, true)
		switch {
		case s == "":
		case !isSlackUser(s) && !looksLikeEmail(s):
			p.fail(en, "must be a Slack user id (U…/W…) or an email address, got %q", s)
		case seen[s]:
			p.fail(en, "lists %q twice", s)
		default:
			seen[s] = true
			r.Slack.Reviewers = append(r.Slack.Reviewers, s)
		}
	}
	p.authorization(n, r)
}

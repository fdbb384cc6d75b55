package aah

import (
	"encoding/json"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Limits of the review extension (extensions.decisions). They keep a
// request's Slack message and modals within Block Kit's limits (a static
// select holds 100 options of 75 characters) and its stored document small.
const (
	MaxParameters        = 50   // proposed_action.parameters
	MaxProposedActionLen = 8192 // bytes of proposed_action as JSON
	MaxRejectReasons     = 10
	MaxShortTextLength   = 75 // a reject reason or an enum value: one Slack option
	MaxEnumValues        = 100
	MaxNameLength        = 128 // action_type, tool_name, cost_unit, a parameter name
	MaxRiskItems         = 20  // risk_factors, potential_consequences
	MaxParentArtifacts   = 20  // handoff.parent_artifact_ids
)

// ValidActionKey reports whether s can be an action key (1-128 characters
// of letters, digits and _ . : / -).
func ValidActionKey(s string) bool { return isActionKey(s) }

// reviews parses extensions.decisions into each named decision's Review.
// r.Data must be parsed already: the keys name its decisions. Fields the
// extension does not define are ignored, as in extensions.slack.
func (p *parser) reviews(n node, r *Request) {
	if !p.object(n, false) {
		return
	}
	m := n.v.(map[string]any)
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys) // problems in a stable order
	for _, id := range keys {
		rn := n.field(id)
		i := slices.IndexFunc(r.Data.Decisions, func(d Decision) bool { return d.ID == id })
		if i < 0 {
			p.fail(rn, "names no decision of this request (the keys are decision ids)")
			continue
		}
		if !p.object(rn, true) {
			continue
		}
		r.Data.Decisions[i].Review = p.review(rn, r.Data.Decisions[i])
	}
}

func (p *parser) review(n node, d Decision) *Review {
	rv := &Review{}
	rv.Action = p.proposedAction(n.field("proposed_action"))
	rv.Risk = p.riskAssessment(n.field("risk_assessment"))
	p.responses(n, d, rv)
	p.editable(n.field("editable"), d, rv)
	p.rejectReasons(n.field("reject_reasons"), d, rv)

	// Empty or null means absent, as for the document's other optional
	// strings: the key defaults to the tool name.
	kn := n.field("action_key")
	if key := p.str(kn, false); key != "" {
		if !ValidActionKey(key) {
			p.fail(kn, "must be 1-128 characters of letters, digits and _ . : / -, got %q", key)
		} else {
			rv.ActionKey = key
		}
	} else if rv.Action != nil && ValidActionKey(rv.Action.ToolName) {
		rv.ActionKey = rv.Action.ToolName
	}

	pn := n.field("precision")
	switch prec := p.str(pn, false); {
	case prec == "": // absent, empty, or not a string (reported by str)
	case d.Type != TypeDate:
		p.fail(pn, "only date decisions take a precision")
	case prec == "datetime":
		rv.DateTime = true
	case prec != "date":
		p.fail(pn, `must be "date" or "datetime", got %q`, prec)
	}
	return rv
}

// shortStr is an optional string of at most max characters.
func (p *parser) shortStr(n node, max int) string {
	s := p.str(n, false)
	if utf8.RuneCountInString(s) > max {
		p.fail(n, "is %d characters long; at most %d", utf8.RuneCountInString(s), max)
		return ""
	}
	return s
}

func (p *parser) proposedAction(n node) *ProposedAction {
	if !p.object(n, false) {
		return nil
	}
	a := &ProposedAction{
		ActionType:      p.shortStr(n.field("action_type"), MaxNameLength),
		ToolName:        p.shortStr(n.field("tool_name"), MaxNameLength),
		ExpectedOutcome: p.shortStr(n.field("expected_outcome"), MaxTextLength),
		Reversible:      p.boolean(n.field("reversible")),
		CostUnit:        p.shortStr(n.field("cost_unit"), MaxNameLength),
	}
	cn := n.field("estimated_cost")
	if c := p.number(cn); c != nil {
		if math.IsInf(*c, 0) || *c < 0 {
			p.fail(cn, "must be a finite number of at least 0, got %v", *c)
		} else {
			a.EstimatedCost = c
		}
	}
	pn := n.field("parameters")
	if p.object(pn, false) {
		m := pn.v.(map[string]any)
		if len(m) > MaxParameters {
			p.fail(pn, "holds %d parameters; at most %d", len(m), MaxParameters)
		}
		a.Parameters = make(map[string]any, len(m))
		for name := range m {
			a.ParameterOrder = append(a.ParameterOrder, name)
		}
		// The decoded document keeps no key order: parameters are listed
		// by name, so every reader shows them alike.
		sort.Strings(a.ParameterOrder)
		for _, name := range a.ParameterOrder {
			vn := pn.field(name)
			if strings.TrimSpace(name) == "" || utf8.RuneCountInString(name) > MaxNameLength {
				p.fail(vn, "a parameter name must be 1 to %d characters, not blank", MaxNameLength)
			}
			v, err := plainJSON(m[name])
			if err != nil {
				p.fail(vn, "%v", err)
				continue
			}
			a.Parameters[name] = v
		}
	}
	if b, err := json.Marshal(n.v); err == nil && len(b) > MaxProposedActionLen {
		p.fail(n, "is %d bytes as JSON; at most %d (8 KB): send large inputs as an artifact and name it here", len(b), MaxProposedActionLen)
	}
	return a
}

// plainJSON turns a decoded value (json.Number numbers) into the plain form
// ProposedAction.Parameters holds (float64 numbers).
func plainJSON(v any) (any, error) {
	switch x := v.(type) {
	case json.Number:
		f, err := strconv.ParseFloat(string(x), 64)
		if err != nil || math.IsInf(f, 0) {
			return nil, errNotFinite
		}
		return f, nil
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			pv, err := plainJSON(e)
			if err != nil {
				return nil, err
			}
			out[i] = pv
		}
		return out, nil
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			pv, err := plainJSON(e)
			if err != nil {
				return nil, err
			}
			out[k] = pv
		}
		return out, nil
	}
	return v, nil
}

type constError string

func (e constError) Error() string { return string(e) }

const errNotFinite = constError("holds a number that is not finite in 64-bit floating point")

func (p *parser) riskAssessment(n node) *RiskAssessment {
	if !p.object(n, false) {
		return nil
	}
	ra := &RiskAssessment{}
	ln := n.field("risk_level")
	switch lvl := p.str(ln, false); lvl {
	case "":
	case RiskLow, RiskMedium, RiskHigh, RiskCritical:
		ra.Level = lvl
	default:
		p.fail(ln, "must be low, medium, high or critical; got %q", lvl)
	}
	ra.Factors = p.textList(n.field("risk_factors"))
	ra.Consequences = p.textList(n.field("potential_consequences"))
	rn := n.field("reversibility")
	switch rev := p.str(rn, false); rev {
	case "", ReversibleFully, ReversiblePartially, Irreversible:
		ra.Reversibility = rev
	default:
		p.fail(rn, "must be fully, partially or irreversible; got %q", rev)
	}
	cn := n.field("confidence")
	if c := p.number(cn); c != nil {
		if *c < 0 || *c > 1 {
			p.fail(cn, "must be a number from 0 to 1, got %v", *c)
		} else {
			ra.Confidence = c
		}
	}
	return ra
}

// textList is a list of at most MaxRiskItems non-blank texts.
func (p *parser) textList(n node) []string {
	items := p.array(n)
	if len(items) > MaxRiskItems {
		p.fail(n, "lists %d items; at most %d", len(items), MaxRiskItems)
		return nil
	}
	var out []string
	for i := range items {
		en := n.index(i)
		if s := p.str(en, true); s != "" {
			if s = p.shortStr(en, MaxTextLength); s != "" {
				out = append(out, s)
			}
		}
	}
	return out
}

// decisionVerbs are the verbs that answer one approval decision.
var decisionVerbs = []Verb{VerbApprove, VerbReject, VerbModify}

// responses parses review node rn's responses.
func (p *parser) responses(rn node, d Decision, rv *Review) {
	n := rn.field("responses")
	items := p.array(n)
	if n.absent() || items == nil {
		return
	}
	if len(items) == 0 {
		p.fail(n, "must list at least one response (omit it for approve and reject)")
		return
	}
	var listed []Verb
	for i := range items {
		en := n.index(i)
		v := Verb(p.str(en, true))
		switch {
		case v == "":
		case !slices.Contains(Verbs, v):
			p.fail(en, "unknown response %q; one of approve, reject, modify, defer, change_plan, escalate, abort", v)
		case slices.Contains(listed, v):
			p.fail(en, "lists %q twice", v)
		case slices.Contains(decisionVerbs, v) && d.Type != TypeApproval:
			p.fail(en, "%s answers approval decisions only; this is a %s decision", v, d.Type)
		default:
			listed = append(listed, v)
			if v == VerbModify {
				if rv.Action == nil || rv.Action.Parameters == nil {
					p.fail(en, "modify needs proposed_action.parameters to edit")
				} else if ed, _ := rn.field("editable").v.(map[string]any); len(ed) == 0 {
					p.fail(en, "modify needs at least one editable parameter (editable)")
				}
			}
		}
	}
	for _, v := range Verbs { // Verbs order
		if slices.Contains(listed, v) {
			rv.Responses = append(rv.Responses, v)
		}
	}
}

func (p *parser) rejectReasons(n node, d Decision, rv *Review) {
	items := p.array(n)
	switch {
	case items == nil:
		return
	case d.Type != TypeApproval:
		p.fail(n, "only approval decisions can be rejected; this is a %s decision", d.Type)
		return
	case rv.Responses != nil && !slices.Contains(rv.Responses, VerbReject):
		p.fail(n, "responses does not include reject")
		return
	case len(items) == 0:
		p.fail(n, "must list at least one reason (omit it for free text only)")
		return
	case len(items) > MaxRejectReasons:
		p.fail(n, "lists %d reasons; at most %d", len(items), MaxRejectReasons)
		return
	}
	rv.RejectReasons = p.distinctShortTexts(n, items)
}

// parentArtifactIDs parses handoff.parent_artifact_ids.
func (p *parser) parentArtifactIDs(n node, h *Handoff) {
	items := p.array(n)
	if len(items) > MaxParentArtifacts {
		p.fail(n, "lists %d artifacts; at most %d", len(items), MaxParentArtifacts)
		return
	}
	for i := range items {
		en := n.index(i)
		switch s := p.str(en, true); {
		case s == "":
		case !ValidRequestID(s):
			p.fail(en, "must be an artifact id: 1-128 characters of letters, digits and _ . : - starting with a letter or digit")
		case slices.Contains(h.ParentArtifactIDs, s):
			p.fail(en, "lists %q twice", s)
		default:
			h.ParentArtifactIDs = append(h.ParentArtifactIDs, s)
		}
	}
}

package aah

import (
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Accepts reports whether the decision accepts verb v. Without responses an
// approval decision accepts approve and reject, and no other decision
// accepts any verb (it takes its plain answer). Modify also needs an
// editable parameter (the parser insists on one).
func (d Decision) Accepts(v Verb) bool {
	if d.Review == nil || d.Review.Responses == nil {
		return d.Type == TypeApproval && (v == VerbApprove || v == VerbReject)
	}
	if v == VerbModify && len(d.Review.Editable) == 0 {
		return false
	}
	return slices.Contains(d.Review.Responses, v)
}

// Accepts reports whether the request offers verb v: whether any of its
// decisions accepts it. It is meant for the request-level verbs
// (RequestVerbs).
func (r *Request) Accepts(v Verb) bool {
	return slices.ContainsFunc(r.Data.Decisions, func(d Decision) bool { return d.Accepts(v) })
}

// EditableParam returns the editable parameter named name.
func (rv Review) EditableParam(name string) (EditableParam, bool) {
	for _, e := range rv.Editable {
		if e.Name == name {
			return e, true
		}
	}
	return EditableParam{}, false
}

// Irreversible reports whether the agent says the decision's action cannot
// be undone (proposed_action.reversible false, or risk_assessment's
// reversibility "irreversible"): approving it asks to confirm, and no
// standing approval covers it.
func (d Decision) Irreversible() bool {
	if d.Review == nil {
		return false
	}
	if a := d.Review.Action; a != nil && a.Reversible != nil && !*a.Reversible {
		return true
	}
	return d.Review.Risk != nil && d.Review.Risk.Reversibility == Irreversible
}

// CriticalRisk reports whether the agent assessed the decision's risk as
// critical.
func (d Decision) CriticalRisk() bool {
	return d.Review != nil && d.Review.Risk != nil && d.Review.Risk.Level == RiskCritical
}

// ActionKey is the key a standing approval of this decision covers: the
// review's action_key (or tool_name), for approval decisions only; "" when
// it has none.
func (d Decision) ActionKey() string {
	if d.Type != TypeApproval || d.Review == nil {
		return ""
	}
	return d.Review.ActionKey
}

// ParamError is a problem with one edited parameter, for the modal field
// (or API field) that holds it.
type ParamError struct {
	Param   string
	Message string
}

func (e *ParamError) Error() string { return e.Param + ": " + e.Message }

// CheckParameters validates a reviewer's edits (parameter name → value, as
// ParseParamInput or JSON decoding gives them) of the decision's proposed
// action and returns the full parameter set: the original with the edits
// applied. An edit of a parameter that is not editable, or a value that does
// not fit its declared type and constraints, is a *ParamError naming it
// (the first by ParameterOrder).
func CheckParameters(d Decision, edited map[string]any) (map[string]any, error) {
	if d.Review == nil || d.Review.Action == nil || d.Review.Action.Parameters == nil {
		return nil, &ParamError{Message: "this decision has no parameters to edit"}
	}
	a := d.Review.Action
	names := slices.Sorted(maps.Keys(edited))
	slices.SortStableFunc(names, func(x, y string) int { return orderIndex(a.ParameterOrder, x) - orderIndex(a.ParameterOrder, y) })
	full := make(map[string]any, len(a.Parameters))
	maps.Copy(full, a.Parameters)
	for _, name := range names {
		e, ok := d.Review.EditableParam(name)
		if !ok {
			if _, exists := a.Parameters[name]; exists {
				return nil, &ParamError{Param: name, Message: "is not editable"}
			}
			return nil, &ParamError{Param: name, Message: "is not a parameter of the proposed action"}
		}
		v := normalizeParam(edited[name])
		if !fitsType(e.Type, v) {
			return nil, &ParamError{Param: name, Message: "must be " + typeArticle(e.Type)}
		}
		if err := CheckParam(e, v); err != nil {
			return nil, &ParamError{Param: name, Message: err.Error()}
		}
		full[name] = v
	}
	return full, nil
}

func orderIndex(order []string, name string) int {
	if i := slices.Index(order, name); i >= 0 {
		return i
	}
	return len(order)
}

// normalizeParam gives numbers one Go type (float64), as decoded JSON has.
func normalizeParam(v any) any {
	switch x := v.(type) {
	case int:
		return float64(x)
	case int64:
		return float64(x)
	case json.Number:
		if f, err := x.Float64(); err == nil {
			return f
		}
	}
	return v
}

// fitsType reports whether v (decoded JSON) has the parameter type t.
func fitsType(t string, v any) bool {
	switch t {
	case ParamString:
		_, ok := v.(string)
		return ok
	case ParamNumber:
		f, ok := v.(float64)
		return ok && !math.IsNaN(f) && !math.IsInf(f, 0)
	case ParamInteger:
		f, ok := v.(float64)
		return ok && f == math.Trunc(f) && !math.IsInf(f, 0)
	case ParamBoolean:
		_, ok := v.(bool)
		return ok
	}
	return false
}

// CheckParam validates a value of the parameter's type (see fitsType)
// against its constraints.
func CheckParam(e EditableParam, v any) error {
	if !fitsType(e.Type, v) {
		return fmt.Errorf("must be %s", typeArticle(e.Type))
	}
	switch x := v.(type) {
	case float64:
		if e.Minimum != nil && x < *e.Minimum {
			return fmt.Errorf("must be at least %v", *e.Minimum)
		}
		if e.Maximum != nil && x > *e.Maximum {
			return fmt.Errorf("must be at most %v", *e.Maximum)
		}
	case string:
		n := utf8.RuneCountInString(x)
		if e.Enum != nil && !slices.Contains(e.Enum, x) {
			return fmt.Errorf("must be one of %s", strings.Join(e.Enum, ", "))
		}
		if e.MinLength != nil && n < *e.MinLength {
			return fmt.Errorf("must be at least %d characters long", *e.MinLength)
		}
		if e.MaxLength != nil && n > *e.MaxLength {
			return fmt.Errorf("must be at most %d characters long", *e.MaxLength)
		}
		if n > MaxTextLength {
			return fmt.Errorf("must be at most %d characters long", MaxTextLength)
		}
		if e.Pattern != "" {
			re, err := regexp.Compile(e.Pattern)
			if err != nil {
				return fmt.Errorf("the parameter's pattern does not compile: %w", err)
			}
			if !re.MatchString(x) {
				return fmt.Errorf("must match the pattern %s", e.Pattern)
			}
		}
	}
	return nil
}

// ParseParamInput turns what a reviewer typed (or picked) in a modal field
// into the parameter's typed value: a number for number and integer
// parameters, true or false for booleans, the text itself for strings. It
// checks the type only; CheckParameters checks the constraints.
func ParseParamInput(e EditableParam, raw string) (any, error) {
	switch e.Type {
	case ParamString:
		return raw, nil
	case ParamNumber, ParamInteger:
		s := strings.TrimSpace(raw)
		f, err := strconv.ParseFloat(s, 64)
		if err != nil || math.IsInf(f, 0) || math.IsNaN(f) || strings.ContainsAny(s, "xXpP_") || !hasDigit(s) {
			return nil, fmt.Errorf("must be a number, like 4 or 2.5")
		}
		if e.Type == ParamInteger && f != math.Trunc(f) {
			return nil, fmt.Errorf("must be a whole number")
		}
		return f, nil
	case ParamBoolean:
		switch strings.ToLower(strings.TrimSpace(raw)) {
		case "true":
			return true, nil
		case "false":
			return false, nil
		}
		return nil, fmt.Errorf("must be true or false")
	}
	return nil, fmt.Errorf("has an unknown type %q", e.Type)
}

func hasDigit(s string) bool { return strings.ContainsAny(s, "0123456789") }

// ParamChange is one parameter a reviewer changed.
type ParamChange struct {
	Name     string
	From, To any
}

// ChangedParameters lists the parameters whose value differs between orig
// and edited (one missing from either counts as changed, to or from nil),
// in ParameterOrder: by name.
func ChangedParameters(orig, edited map[string]any) []ParamChange {
	names := slices.Sorted(maps.Keys(edited))
	for name := range orig {
		if _, ok := edited[name]; !ok {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	var out []ParamChange
	for _, name := range names {
		from, to := orig[name], edited[name]
		if !reflect.DeepEqual(normalizeParam(from), normalizeParam(to)) {
			out = append(out, ParamChange{Name: name, From: from, To: to})
		}
	}
	return out
}

// paramJSON is a parameter value as JSON writes it (for messages).
func paramJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// ParamText is a parameter value as a message shows it: strings as they
// are, anything else as JSON.
func ParamText(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	return paramJSON(v)
}

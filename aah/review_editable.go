package aah

import (
	"math"
	"regexp"
	"slices"
	"sort"
	"unicode/utf8"
)

// editable parses review node n's editable: parameter name → its type and
// constraints. Each must name a parameter of proposed_action whose value
// fits them (approving it unedited must be a valid answer).
func (p *parser) editable(n node, d Decision, rv *Review) {
	if !p.object(n, false) {
		return
	}
	if d.Type != TypeApproval {
		p.fail(n, "only approval decisions have parameters to edit; this is a %s decision", d.Type)
		return
	}
	var params map[string]any
	var order []string
	if rv.Action != nil {
		params, order = rv.Action.Parameters, rv.Action.ParameterOrder
	}
	m := n.v.(map[string]any)
	names := make([]string, 0, len(m))
	for name := range m {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		en := n.field(name)
		if !p.object(en, true) {
			continue
		}
		e, ok := p.editableParam(en, name)
		current, exists := params[name]
		switch {
		case !exists:
			p.fail(en, "names no parameter of proposed_action.parameters")
		case !ok:
		case !fitsType(e.Type, current):
			p.fail(en.field("type"), "the proposed value %s is not %s", paramJSON(current), typeArticle(e.Type))
		default:
			if err := CheckParam(e, current); err != nil {
				p.fail(en, "the proposed value %s does not meet the constraints: %v", paramJSON(current), err)
				continue
			}
			rv.Editable = append(rv.Editable, e)
		}
	}
	// In the order the parameters are shown (ParameterOrder).
	slices.SortStableFunc(rv.Editable, func(a, b EditableParam) int {
		return slices.Index(order, a.Name) - slices.Index(order, b.Name)
	})
}

func typeArticle(t string) string {
	if t == ParamInteger {
		return "an integer"
	}
	return "a " + t
}

// editableParam parses one editable entry; ok is false when it has a problem.
func (p *parser) editableParam(n node, name string) (EditableParam, bool) {
	before := len(p.problems)
	e := EditableParam{Name: name}
	tn := n.field("type")
	switch e.Type = p.str(tn, true); e.Type {
	case "":
	case ParamString, ParamNumber, ParamInteger, ParamBoolean:
	default:
		p.fail(tn, "must be string, number, integer or boolean; got %q", e.Type)
	}
	numeric := e.Type == ParamNumber || e.Type == ParamInteger
	onlyFor := func(field string, ok bool, what string) bool {
		fn := n.field(field)
		if !fn.absent() && !ok && e.Type != "" {
			p.fail(fn, "applies to %s parameters only; this one is %s", what, typeArticle(e.Type))
			return false
		}
		return !fn.absent()
	}
	if onlyFor("enum", e.Type == ParamString, "string") {
		e.Enum = p.enum(n.field("enum"))
	}
	if onlyFor("minimum", numeric, "number and integer") {
		e.Minimum = p.number(n.field("minimum"))
	}
	if onlyFor("maximum", numeric, "number and integer") {
		e.Maximum = p.number(n.field("maximum"))
	}
	if e.Minimum != nil && e.Maximum != nil && *e.Minimum > *e.Maximum {
		p.fail(n.field("maximum"), "is less than minimum (%v < %v)", *e.Maximum, *e.Minimum)
	}
	if onlyFor("min_length", e.Type == ParamString, "string") {
		e.MinLength = p.length(n.field("min_length"))
	}
	if onlyFor("max_length", e.Type == ParamString, "string") {
		e.MaxLength = p.length(n.field("max_length"))
		if e.MaxLength != nil && *e.MaxLength == 0 {
			p.fail(n.field("max_length"), "must allow at least one character")
		}
	}
	if e.MinLength != nil && e.MaxLength != nil && *e.MinLength > *e.MaxLength {
		p.fail(n.field("max_length"), "is less than min_length (%d < %d)", *e.MaxLength, *e.MinLength)
	}
	if onlyFor("pattern", e.Type == ParamString, "string") {
		pn := n.field("pattern")
		e.Pattern = p.str(pn, true)
		if e.Pattern != "" {
			if _, err := regexp.Compile(e.Pattern); err != nil {
				p.fail(pn, "is not a valid RE2 regular expression: %v", err)
			}
		}
	}
	return e, len(p.problems) == before
}

// length is a text length: a whole number from 0 to MaxTextLength.
func (p *parser) length(n node) *int {
	f := p.number(n)
	if f == nil {
		return nil
	}
	if *f < 0 || *f != math.Trunc(*f) || *f > MaxTextLength {
		p.fail(n, "is a length in characters: a whole number from 0 to %d", MaxTextLength)
		return nil
	}
	l := int(*f)
	return &l
}

// enum is a list of 1 to MaxEnumValues distinct non-blank values of at
// most MaxShortTextLength characters (a Slack select's options).
func (p *parser) enum(n node) []string {
	items := p.array(n)
	switch {
	case items == nil:
		return nil
	case len(items) == 0:
		p.fail(n, "must list at least one value (omit it for free text)")
		return nil
	case len(items) > MaxEnumValues:
		p.fail(n, "lists %d values; at most %d", len(items), MaxEnumValues)
		return nil
	}
	return p.distinctShortTexts(n, items)
}

// distinctShortTexts checks each item of list n is a non-blank string of at
// most MaxShortTextLength characters, listed once.
func (p *parser) distinctShortTexts(n node, items []any) []string {
	var out []string
	for i := range items {
		en := n.index(i)
		s := p.str(en, true)
		switch {
		case s == "":
		case utf8.RuneCountInString(s) > MaxShortTextLength:
			p.fail(en, "is %d characters long; at most %d", utf8.RuneCountInString(s), MaxShortTextLength)
		case slices.Contains(out, s):
			p.fail(en, "lists %q twice", s)
		default:
			out = append(out, s)
		}
	}
	return out
}

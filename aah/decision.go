package aah

import (
	"encoding/json"
	"fmt"
	"math"
	"net"
	"net/mail"
	"net/url"
	"regexp"
	"strings"
	"time"
	"unicode/utf8"
)

// Limits the spec leaves open, fixed here so ids stay usable in Slack block
// and action ids (255 characters) and in Redis keys.
const (
	MaxReviewers   = 50
	MaxReminders   = 10
	MaxTextLength  = 3000 // Slack's plain_text_input max_length
	DateOnlyLayout = "2006-01-02"
)

// ValidRequestID reports whether s can be a request id.
func ValidRequestID(s string) bool { return isRequestID(s) }

// IsSlackUserID reports whether s looks like a Slack user id (U… or W…).
func IsSlackUserID(s string) bool { return isSlackUser(s) }

// IsSlackChannelID reports whether s looks like a Slack channel id (C… or
// G…; not a DM).
func IsSlackChannelID(s string) bool { return isChannelID(s) }

// IsSlackChannelName reports whether s is a channel given by name
// ("#approvals").
func IsSlackChannelName(s string) bool { return isChannelName(s) }

// IsEmail reports whether s is a bare email address (no display name).
func IsEmail(s string) bool { return looksLikeEmail(s) }

func looksLikeEmail(s string) bool {
	a, err := mail.ParseAddress(s)
	return err == nil && a.Address == s && a.Name == ""
}

// checkCallbackURL checks the syntax of handoff.response_url. Whether the
// host is a permitted target is decided again at dial time, where it counts.
func checkCallbackURL(raw string, allowInsecure bool) error {
	u, err := url.Parse(raw)
	if err != nil || !u.IsAbs() || u.Host == "" {
		return fmt.Errorf("must be an absolute URL")
	}
	switch {
	case u.Scheme == "https":
	case u.Scheme == "http" && allowInsecure:
	case u.Scheme == "http":
		return fmt.Errorf("must use https (plain http is allowed only with CALLBACK_ALLOW_PRIVATE=true)")
	default:
		return fmt.Errorf("must use https, got scheme %q", u.Scheme)
	}
	if u.User != nil {
		return fmt.Errorf("must not carry credentials in the URL")
	}
	if ip := net.ParseIP(u.Hostname()); ip != nil && !allowInsecure && !isPublicIP(ip) {
		return fmt.Errorf("points to a non-public address %s (allowed only with CALLBACK_ALLOW_PRIVATE=true)", ip)
	}
	return nil
}

func isPublicIP(ip net.IP) bool {
	return !(ip.IsLoopback() || ip.IsPrivate() || ip.IsLinkLocalUnicast() || ip.IsLinkLocalMulticast() ||
		ip.IsUnspecified() || ip.IsMulticast() || ip.IsInterfaceLocalMulticast())
}

func (p *parser) decision(n node) (Decision, bool) {
	if !p.object(n, true) {
		return Decision{}, false
	}
	d := Decision{
		ID:          p.str(n.field("id"), true),
		Prompt:      p.str(n.field("prompt"), true),
		Description: p.str(n.field("description"), false),
	}
	if d.ID != "" && !isDecisionID(d.ID) {
		p.fail(n.field("id"), "must be 1-64 characters of letters, digits and _ . - starting with a letter or digit")
	}
	typeNode := n.field("type")
	d.Type = DecisionType(p.str(typeNode, true))
	validType := false
	for _, t := range DecisionTypes {
		validType = validType || d.Type == t
	}
	if strings.TrimSpace(string(d.Type)) != "" && !validType {
		p.fail(typeNode, "must be one of approval, choice, multi_choice, text, number, date; got %q", d.Type)
	}
	reqNode := n.field("required")
	if req := p.boolean(reqNode); req != nil {
		d.Required = *req
	} else if reqNode.absent() {
		p.fail(reqNode, "is required (true or false)")
	}
	if !validType {
		return d, true
	}
	p.options(n, &d)
	p.constraints(n, &d)
	d.Default = p.defaultValue(n.field("default"), d)
	return d, true
}

func (p *parser) options(n node, d *Decision) {
	on := n.field("options")
	isChoice := d.Type == TypeChoice || d.Type == TypeMultiChoice
	if !isChoice {
		// An empty list says "no options" as well as null does; options
		// given to another type would be shown nowhere, so they are refused
		// rather than silently dropped.
		if items := p.array(on); len(items) > 0 {
			p.fail(on, "only choice and multi_choice decisions take options (an empty list or null is accepted)")
		}
		return
	}
	items := p.array(on)
	if on.absent() || (items != nil && len(items) == 0) {
		p.fail(on, "a %s decision needs at least one option", d.Type)
		return
	}
	values := map[string]int{}
	for i := range items {
		o := on.index(i)
		if !p.object(o, true) {
			continue
		}
		opt := Option{
			Value:       p.str(o.field("value"), true),
			Label:       p.str(o.field("label"), true),
			Description: p.str(o.field("description"), false),
		}
		if first, dup := values[opt.Value]; dup && opt.Value != "" {
			p.fail(o.field("value"), "duplicates the value of options[%d] (%q); option values must be unique", first, opt.Value)
		} else {
			values[opt.Value] = i
		}
		d.Options = append(d.Options, opt)
	}
}

func (p *parser) constraints(n node, d *Decision) {
	cn := n.field("constraints")
	if !p.object(cn, false) {
		return
	}
	if d.Type == TypeDate {
		p.dateConstraints(cn, d)
		return
	}
	if d.Type == TypeApproval || d.Type == TypeChoice {
		// The spec defines constraints for text and number; an approval's
		// yes/no and a choice's single pick have nothing they could bound,
		// so constraints are accepted and ignored (their shape is checked,
		// as the schema does).
		for _, name := range []string{"min", "max"} {
			switch bn := cn.field(name); bn.v.(type) {
			case nil, string, json.Number:
			default:
				p.fail(bn, "must be a number or a string, got %s", typeName(bn.v))
			}
		}
		p.str(cn.field("pattern"), false)
		return
	}
	c := &d.Constraints
	c.Min, c.Max = p.number(cn.field("min")), p.number(cn.field("max"))
	c.Pattern = p.str(cn.field("pattern"), false)
	switch d.Type {
	case TypeNumber:
		if !cn.field("pattern").absent() {
			p.fail(cn.field("pattern"), "only text decisions take a pattern")
		}
	case TypeMultiChoice:
		if !cn.field("pattern").absent() {
			p.fail(cn.field("pattern"), "only text decisions take a pattern")
		}
		for _, b := range []struct {
			name string
			v    *float64
		}{{"min", c.Min}, {"max", c.Max}} {
			if b.v != nil && (*b.v < 0 || *b.v != math.Trunc(*b.v) || *b.v > float64(len(d.Options))) {
				p.fail(cn.field(b.name), "counts selected options: a whole number from 0 to %d", len(d.Options))
			}
		}
		if c.Max != nil && *c.Max == 0 {
			p.fail(cn.field("max"), "must allow at least one selection")
		}
	case TypeText:
		for _, b := range []struct {
			name string
			v    *float64
		}{{"min", c.Min}, {"max", c.Max}} {
			if b.v != nil && (*b.v < 0 || *b.v != math.Trunc(*b.v) || *b.v > MaxTextLength) {
				p.fail(cn.field(b.name), "is a length in characters: a whole number from 0 to %d", MaxTextLength)
			}
		}
		if c.Max != nil && *c.Max == 0 {
			p.fail(cn.field("max"), "must allow at least one character")
		}
		if c.Pattern != "" {
			if _, err := regexp.Compile(c.Pattern); err != nil {
				p.fail(cn.field("pattern"), "is not a valid RE2 regular expression: %v", err)
			}
		}
	}
	if c.Min != nil && c.Max != nil && *c.Min > *c.Max {
		p.fail(cn, "min (%v) is greater than max (%v)", *c.Min, *c.Max)
	}
}

// defaultValue type-checks a default against the decision's type and
// constraints and returns it typed (see Decision.Default).
func (p *parser) defaultValue(n node, d Decision) any {
	if n.absent() {
		return nil
	}
	before := len(p.problems)
	var v any
	switch d.Type {
	case TypeApproval:
		if b := p.boolean(n); b != nil {
			v = *b
		}
	case TypeChoice:
		s := p.str(n, false)
		if _, isString := n.v.(string); isString && !hasOption(d, s) {
			p.fail(n, "%q is not one of the option values", s)
		}
		v = s
	case TypeMultiChoice:
		items := p.array(n)
		picked := []string{}
		for i := range items {
			s := p.str(n.index(i), true)
			switch {
			case s == "":
			case !hasOption(d, s):
				p.fail(n.index(i), "%q is not one of the option values", s)
			case contains(picked, s):
				p.fail(n.index(i), "selects %q twice", s)
			default:
				picked = append(picked, s)
			}
		}
		if err := CheckSelectionCount(d, len(picked)); err != nil && items != nil {
			p.fail(n, "%v", err)
		}
		v = picked
	case TypeText:
		s := p.str(n, false)
		if err := CheckText(d, s); err != nil {
			p.fail(n, "%v", err)
		}
		v = s
	case TypeNumber:
		if f := p.number(n); f != nil {
			if err := CheckNumber(d, *f); err != nil {
				p.fail(n, "%v", err)
			}
			v = *f
		}
	case TypeDate:
		s := p.str(n, false)
		if _, isString := n.v.(string); isString {
			if err := CheckDate(d, s); err != nil {
				p.fail(n, "%v", err)
			} else if !p.opts.Stored && !isDateValueForm(s) {
				p.fail(n, dateFormMessage)
			}
		}
		v = s
	}
	if len(p.problems) > before {
		return nil
	}
	return v
}

func hasOption(d Decision, value string) bool {
	for _, o := range d.Options {
		if o.Value == value {
			return true
		}
	}
	return false
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// CheckText validates a text answer against the decision's constraints.
func CheckText(d Decision, s string) error {
	n := float64(utf8.RuneCountInString(s))
	c := d.Constraints
	if c.Min != nil && n < *c.Min {
		return fmt.Errorf("must be at least %v characters long", *c.Min)
	}
	if c.Max != nil && n > *c.Max {
		return fmt.Errorf("must be at most %v characters long", *c.Max)
	}
	if n > MaxTextLength {
		return fmt.Errorf("must be at most %d characters long", MaxTextLength)
	}
	if c.Pattern != "" {
		re, err := regexp.Compile(c.Pattern)
		if err != nil {
			return fmt.Errorf("the decision's pattern does not compile: %w", err)
		}
		if !re.MatchString(s) {
			return fmt.Errorf("must match the pattern %s", c.Pattern)
		}
	}
	return nil
}

// CheckNumber validates a number answer against the decision's constraints.
func CheckNumber(d Decision, f float64) error {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return fmt.Errorf("must be a finite number")
	}
	c := d.Constraints
	if c.Min != nil && f < *c.Min {
		return fmt.Errorf("must be at least %v", *c.Min)
	}
	if c.Max != nil && f > *c.Max {
		return fmt.Errorf("must be at most %v", *c.Max)
	}
	return nil
}

// CheckSelectionCount validates how many options a multi_choice answer picks.
func CheckSelectionCount(d Decision, n int) error {
	c := d.Constraints
	if c.Min != nil && float64(n) < *c.Min {
		return fmt.Errorf("must select at least %v options", *c.Min)
	}
	if c.Max != nil && float64(n) > *c.Max {
		return fmt.Errorf("must select at most %v options", *c.Max)
	}
	return nil
}

// ParseDateValue accepts a calendar date (2026-02-17) or an ISO 8601
// date-time with zone (2026-02-17T17:00:00Z), the two forms a date answer takes.
func ParseDateValue(s string) (time.Time, error) {
	s = strings.TrimSpace(s)
	if t, err := time.Parse(DateOnlyLayout, s); err == nil {
		return t, nil
	}
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, nil
	}
	return time.Time{}, fmt.Errorf("must be an ISO 8601 date (2026-02-17) or date-time with a time zone, got %q", s)
}

// PreselectedDefault is the value a reviewer sees already selected in the
// decision's Slack control before touching it: a choice menu's initial
// option, a multi-select's initial options, a date picker's initial date.
// Approval buttons and the text and number input buttons show no selection,
// so their defaults are never preselected. ok is false when the control shows
// nothing selected. A date default given as a date-time is preselected as
// its calendar date, which is what the picker shows and would send; a
// date-time decision's default as its UTC instant to the second.
func (d Decision) PreselectedDefault() (v any, ok bool) {
	switch d.Type {
	case TypeChoice:
		s, isString := d.Default.(string)
		return s, isString && hasOption(d, s)
	case TypeMultiChoice:
		picked, isList := d.Default.([]string)
		return picked, isList && len(picked) > 0
	case TypeDate:
		s, isString := d.Default.(string)
		if !isString {
			return nil, false
		}
		t, err := ParseDateValue(s)
		if err != nil {
			return nil, false
		}
		if d.Review != nil && d.Review.DateTime {
			// A datetimepicker shows an instant and sends it back in Unix
			// seconds; a date default is that day's midnight UTC.
			return t.UTC().Truncate(time.Second).Format(time.RFC3339), true
		}
		return t.Format(DateOnlyLayout), true
	}
	return nil, false
}

package aah

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Person is a human who answered, identified by their Slack user id.
type Person struct {
	ID   string `json:"id"`   // Slack user id, e.g. U0ALICE
	Name string `json:"name"` // display or real name when known
	// Agent is set when an agent (an INTAKE_TOKENS name the operator granted
	// approval in AGENT_APPROVERS) acts with the authority of the Slack user
	// ID: seed 000's "another agent with approval authority".
	Agent string `json:"agent,omitempty"`
	// Via is the channel the person acted through when it is not Slack:
	// "api" for the decision API.
	Via string `json:"via,omitempty"`
}

// ViaAPI is Person.Via of an action taken through the HTTP decision API.
const ViaAPI = "api"

// AgentID is the person as an AAH source agent id: "human:<slack user id>",
// or "agent:<name>" for an agent approver.
func (p Person) AgentID() string {
	if p.Agent != "" {
		return "agent:" + p.Agent
	}
	return "human:" + p.ID
}

// Answer is one recorded answer to one decision.
type Answer struct {
	DecisionID string `json:"decision_id"`
	// Value is typed by decision type: bool (approval), string (choice, text,
	// date), []string (multi_choice), float64 (number). Nil while only a
	// comment was given.
	Value any `json:"value"`
	// Comments holds every person's comment on the decision, one per person
	// (their latest: writing again replaces theirs, the audit keeps every
	// version), in the order people first commented. Another person's answer
	// or comment never removes one.
	Comments  []Comment `json:"comments,omitempty"`
	By        Person    `json:"by"`
	At        time.Time `json:"at"`
	Defaulted bool      `json:"defaulted,omitempty"` // took the decision's default at resolution
	TimedOut  bool      `json:"timed_out,omitempty"` // given by the on_deadline action (approve/reject)
	// DefaultAccepted says the person By submitted the request while the
	// decision's control showed its default preselected (see
	// Decision.PreselectedDefault): they accepted what they saw, so the
	// answer is theirs, At is when they submitted, and it is marked so.
	DefaultAccepted bool `json:"default_accepted,omitempty"`
	// Signoffs are the verdicts of an approval decision that needs several
	// (Rules.Gated); Value is what they settle to (Rules.Settle).
	Signoffs []Signoff `json:"signoffs,omitempty"`
	// Verb is how the approval was given when it was not a plain approve
	// or reject: VerbModify (approved with Parameters). Empty otherwise.
	Verb Verb `json:"verb,omitempty"`
	// Parameters are the proposed action's parameters as the reviewer
	// edited them (VerbModify): the whole set, edited and unedited.
	Parameters map[string]any `json:"parameters,omitempty"`
	// RejectReason is the reason the reviewer picked from the decision's
	// reject_reasons; their own words are their comment.
	RejectReason string `json:"reject_reason,omitempty"`
	// Grant is the standing approval that answered the decision.
	Grant *GrantRef `json:"grant,omitempty"`
}

// Answered reports whether the answer carries a value (not just a comment).
func (a Answer) Answered() bool { return a.Value != nil }

// Comment is one person's comment on a decision.
type Comment struct {
	By Person `json:"by"`
	// At is when they wrote it; zero for a comment stored before comment
	// times were kept.
	At   time.Time `json:"at,omitzero"`
	Text string    `json:"text"`
}

// CommentOf returns the comment the person (a Slack user id) left.
func (a Answer) CommentOf(personID string) (Comment, bool) {
	for _, c := range a.Comments {
		if c.By.ID == personID {
			return c, true
		}
	}
	return Comment{}, false
}

// WithComment returns the answer with c as c.By's comment, replacing theirs
// in place (or appending it); blank text removes theirs. Other people's
// comments are kept. The receiver's list is not modified.
func (a Answer) WithComment(c Comment) Answer {
	out := make([]Comment, 0, len(a.Comments)+1)
	found := false
	for _, have := range a.Comments {
		if have.By.ID != c.By.ID {
			out = append(out, have)
			continue
		}
		found = true
		if strings.TrimSpace(c.Text) != "" {
			out = append(out, c)
		}
	}
	if !found && strings.TrimSpace(c.Text) != "" {
		out = append(out, c)
	}
	if len(out) == 0 {
		out = nil
	}
	a.Comments = out
	return a
}

// Rationale is the comment the response's single "comment" field carries
// (seed 000 §5: the answer's rationale). For an answer a person gave it is
// their own comment, or none: someone else's comment does not explain their
// answer. When nobody answered by hand (unanswered, a default, an
// on_deadline action) it is the latest comment anyone left. ok is false
// when there is none.
func (a Answer) Rationale() (Comment, bool) {
	if a.Answered() && !a.Defaulted && !a.TimedOut && a.By.ID != "" {
		return a.CommentOf(a.By.ID)
	}
	var latest Comment
	ok := false
	for _, c := range a.Comments {
		if !ok || !c.At.Before(latest.At) {
			latest, ok = c, true
		}
	}
	return latest, ok
}

// UnmarshalJSON restores Value's type, which JSON alone loses ([]any, float64).
func (a *Answer) UnmarshalJSON(b []byte) error {
	type plain Answer
	var raw struct {
		plain
		Value json.RawMessage `json:"value"`
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	*a = Answer(raw.plain)
	a.Value = nil
	if len(raw.Value) == 0 || string(raw.Value) == "null" {
		return nil
	}
	var v any
	if err := json.Unmarshal(raw.Value, &v); err != nil {
		return err
	}
	if list, ok := v.([]any); ok {
		s := make([]string, 0, len(list))
		for _, x := range list {
			str, _ := x.(string)
			s = append(s, str)
		}
		v = s
	}
	a.Value = v
	return nil
}

// CheckAnswer validates a value for a decision: its type, its options and its
// constraints. It returns the value normalised (dates as given, date-times
// of a date-time decision in UTC to the second, multi_choice selections in
// option order).
func CheckAnswer(d Decision, v any) (any, error) {
	switch d.Type {
	case TypeApproval:
		if b, ok := v.(bool); ok {
			return b, nil
		}
		return nil, fmt.Errorf("an approval is true or false")
	case TypeChoice:
		s, ok := v.(string)
		if !ok || !hasOption(d, s) {
			return nil, fmt.Errorf("%q is not one of the options", fmt.Sprint(v))
		}
		return s, nil
	case TypeMultiChoice:
		picked, ok := v.([]string)
		if !ok {
			return nil, fmt.Errorf("a multi_choice answer is a list of option values")
		}
		var out []string
		for _, o := range d.Options {
			if slices.Contains(picked, o.Value) {
				out = append(out, o.Value)
			}
		}
		if len(out) != len(picked) {
			return nil, fmt.Errorf("the selection holds unknown or repeated options")
		}
		if err := CheckSelectionCount(d, len(out)); err != nil {
			return nil, err
		}
		if out == nil {
			out = []string{}
		}
		return out, nil
	case TypeText:
		s, ok := v.(string)
		if !ok {
			return nil, fmt.Errorf("a text answer is a string")
		}
		return s, CheckText(d, s)
	case TypeNumber:
		f, ok := v.(float64)
		if !ok {
			return nil, fmt.Errorf("a number answer is a number")
		}
		return f, CheckNumber(d, f)
	case TypeDate:
		return checkDateAnswer(d, v)
	}
	return nil, fmt.Errorf("unknown decision type %q", d.Type)
}

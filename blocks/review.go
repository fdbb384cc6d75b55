package blocks

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/approvalbot/approvalbot/aah"
	"github.com/slack-go/slack"
)

// This file renders the review extension (aah.Review) of a decision: the
// proposed action and the agent's risk assessment, shown between the
// question and its controls, so a reviewer sees what approving does.

// Budgets of the review blocks' variable parts.
const (
	paramValueBudget = 150 // one parameter's value
	outcomeBudget    = 600 // the expected outcome
	riskListBudget   = 700 // the risk factors, and the consequences, each
	riskItemBudget   = 200 // one risk factor or consequence
)

// reviewBlocks are the proposed action (a section) and the risk assessment
// (a context block) of a decision with the review extension; nil without.
// cut reports that something had to be shortened (View details shows it
// whole).
func reviewBlocks(d aah.Decision) (out []slack.Block, cut bool) {
	rv := d.Review
	if rv == nil {
		return nil, false
	}
	if rv.Action != nil {
		text, proposalCut := proposalText(d)
		out = append(out, section(clampSection(text)))
		cut = proposalCut
	}
	if line, riskCut := riskText(d); line != "" {
		out = append(out, slack.NewContextBlock("", mrkdwn(line)))
		cut = cut || riskCut
	}
	return out, cut
}

// proposalText is the proposed action: tool, parameters as "name: value"
// lines, expected outcome and estimated cost, within a section.
func proposalText(d aah.Decision) (string, bool) {
	a := d.Review.Action
	head := ":hammer_and_wrench: *Proposed action*"
	switch {
	case a.ToolName != "":
		head += ": " + code(a.ToolName, 100)
	case a.ActionType != "":
		head += ": " + plain(escape(a.ActionType), 100)
	}
	if a.ToolName != "" && a.ActionType != "" && a.ActionType != "tool_call" {
		head += " _(" + plain(escape(a.ActionType), 50) + ")_"
	}
	if d.Irreversible() {
		head += "  :warning: *Irreversible*"
	}
	var tail strings.Builder
	outcomeCut := false
	if a.ExpectedOutcome != "" {
		var outcome string
		outcome, outcomeCut = fit(oneLine(a.ExpectedOutcome), outcomeBudget, "…")
		tail.WriteString("\n*Expected outcome:* " + outcome)
	}
	if a.EstimatedCost != nil {
		tail.WriteString("\n*Estimated cost:* " + costText(*a.EstimatedCost, a.CostUnit))
	}
	room := MaxSectionText - utf8.RuneCountInString(head) - utf8.RuneCountInString(tail.String())
	params, cut := paramLines(a, room)
	return head + params + tail.String(), cut || outcomeCut
}

// paramLines lists the parameters as "• *name:* value", each value within
// paramValueBudget, all within room; past it the rest are counted.
func paramLines(a *aah.ProposedAction, room int) (string, bool) {
	names := parameterNames(a)
	var b strings.Builder
	n, cut := 0, false
	for i, name := range names {
		value, valueCut := paramValue(a.Parameters[name])
		line := "\n• " + paramName(name) + " " + value
		more := fmt.Sprintf("\n• …and %d more parameters (see View details)", len(names)-i)
		if n+utf8.RuneCountInString(line)+utf8.RuneCountInString(more) > room {
			b.WriteString(more)
			return b.String(), true
		}
		b.WriteString(line)
		n += utf8.RuneCountInString(line)
		cut = cut || valueCut
	}
	return b.String(), cut
}

// parameterNames are the parameters in the order the agent sent them
// (ParameterOrder), then any the order does not name, sorted.
func parameterNames(a *aah.ProposedAction) []string {
	names := slices.Clone(a.ParameterOrder)
	var rest []string
	for name := range a.Parameters {
		if !slices.Contains(names, name) {
			rest = append(rest, name)
		}
	}
	slices.Sort(rest)
	return append(names, rest...)
}

func paramName(name string) string {
	n, _ := fit(strings.NewReplacer("*", "", "\n", " ").Replace(name), 60, "…")
	return "*" + n + ":*"
}

// paramValue renders a parameter's value on one line for humans: strings
// as they are, numbers without exponent, other JSON compactly; cut reports
// a value shortened to paramValueBudget (View details shows it whole).
func paramValue(v any) (string, bool) {
	return fit(oneLine(valueString(v)), paramValueBudget, "…")
}

// valueString is v as plain text (not escaped, possibly long), as
// responses and the modify modal show it.
func valueString(v any) string { return aah.ParamText(v) }

func costText(cost float64, unit string) string {
	s := strconv.FormatFloat(cost, 'f', -1, 64)
	if unit != "" {
		s += " " + plain(escape(unit), 20)
	}
	return s
}

// riskText is the risk assessment in one context element: the badge,
// reversibility and confidence, then the factors and consequences (cut
// reports some shortened or left out). An irreversible action the proposal
// does not show is flagged here.
func riskText(d aah.Decision) (text string, cut bool) {
	var parts []string
	rk := d.Review.Risk
	if rk != nil && rk.Level != "" {
		parts = append(parts, riskBadge(rk.Level))
	}
	switch {
	case d.Irreversible() && d.Review.Action == nil:
		parts = append(parts, ":warning: *Irreversible*")
	case rk != nil && rk.Reversibility == aah.ReversibleFully:
		parts = append(parts, "fully reversible")
	case rk != nil && rk.Reversibility == aah.ReversiblePartially:
		parts = append(parts, "partially reversible")
	case rk != nil && rk.Reversibility == aah.Irreversible:
		parts = append(parts, "irreversible")
	}
	if rk != nil && rk.Confidence != nil {
		parts = append(parts, fmt.Sprintf("agent's confidence %d%%", int(*rk.Confidence*100+0.5)))
	}
	lines := []string{strings.Join(parts, " · ")}
	if rk != nil {
		for _, list := range []struct {
			label string
			items []string
		}{{"Risk factors", rk.Factors}, {"Possible consequences", rk.Consequences}} {
			if len(list.items) == 0 {
				continue
			}
			joined, listCut := joinItems(list.items, riskListBudget)
			lines = append(lines, "*"+list.label+":* "+joined)
			cut = cut || listCut
		}
	}
	return strings.TrimSpace(strings.Join(lines, "\n")), cut
}

// riskBadge is a risk level as a colored badge.
func riskBadge(level string) string {
	switch level {
	case aah.RiskLow:
		return ":large_green_circle: *Low risk*"
	case aah.RiskMedium:
		return ":large_yellow_circle: *Medium risk*"
	case aah.RiskHigh:
		return ":large_orange_circle: *High risk*"
	case aah.RiskCritical:
		return ":red_circle: *Critical risk*"
	}
	return "*" + plain(escape(level), 30) + " risk*"
}

// joinItems joins items with "; " within budget, each within riskItemBudget,
// counting those left out; cut reports any shortened or left out.
func joinItems(items []string, budget int) (string, bool) {
	var b strings.Builder
	cut := false
	for i, it := range items {
		piece, pieceCut := fit(oneLine(it), riskItemBudget, "…")
		if i > 0 {
			piece = "; " + piece
		}
		more := fmt.Sprintf("; …and %d more", len(items)-i)
		if b.Len() > 0 && utf8.RuneCountInString(b.String())+utf8.RuneCountInString(piece)+len(more) > budget {
			b.WriteString(more)
			return b.String(), true
		}
		b.WriteString(piece)
		cut = cut || pieceCut
	}
	return b.String(), cut
}

// oneLine folds white space (newlines included) into single spaces.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// code renders s as inline code: backticks cannot be escaped there, so
// they are dropped.
func code(s string, limit int) string {
	out, _ := fit(strings.ReplaceAll(oneLine(s), "`", ""), limit, "…")
	return "`" + out + "`"
}

// reviewDetails is the review extension in full for "View details": the
// parameters, the expected outcome and the risk lists the message may
// have shortened.
func reviewDetails(d aah.Decision) []slack.Block {
	rv := d.Review
	if rv == nil {
		return nil
	}
	var out []slack.Block
	list := func(heading string, lines []string) {
		if len(lines) > 0 {
			out = append(out, chunks("*"+heading+"*\n• "+strings.Join(lines, "\n• "))...)
		}
	}
	if a := rv.Action; a != nil {
		var params []string
		for _, name := range parameterNames(a) {
			params = append(params, "*"+escape(name)+":* "+escape(valueString(a.Parameters[name])))
		}
		list("Parameters", params)
		if a.ExpectedOutcome != "" {
			out = append(out, chunks("*Expected outcome*\n"+escape(a.ExpectedOutcome))...)
		}
	}
	if rk := rv.Risk; rk != nil {
		escaped := func(items []string) []string {
			out := make([]string, len(items))
			for i, it := range items {
				out[i] = escape(it)
			}
			return out
		}
		list("Risk factors", escaped(rk.Factors))
		list("Possible consequences", escaped(rk.Consequences))
	}
	return out
}

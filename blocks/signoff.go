package blocks

import (
	"fmt"
	"strings"

	"github.com/approvalbot/approvalbot/aah"
)

// signoffBudget bounds the sign-off progress line of an approval decision.
const signoffBudget = 400

// signoffText is the sign-off progress of an approval decision that needs
// several approvals or required roles, e.g.
// "legal ✅ <@U1> · marketing ⏳ · 1 of 2 approvals"; "" for any other.
func (r *renderer) signoffText(d aah.Decision, a aah.Answer) string {
	rules := r.rules
	if d.Type != aah.TypeApproval || !rules.Gated() || a.Defaulted || a.TimedOut {
		return ""
	}
	p := rules.Tally(a.Signoffs)
	var parts []string
	for _, role := range p.Roles {
		if len(role.By) == 0 {
			parts = append(parts, fmt.Sprintf("*%s* :hourglass_flowing_sand:", escape(role.Name)))
			continue
		}
		parts = append(parts, fmt.Sprintf("*%s* :white_check_mark: %s", escape(role.Name), people(role.By)))
	}
	if p.Quorum > 1 || len(p.Roles) == 0 {
		count := fmt.Sprintf("%d of %d approvals", min(len(p.Approvals), p.Quorum), p.Quorum)
		if len(p.Approvals) > 0 {
			by := make([]aah.Person, len(p.Approvals))
			for i, s := range p.Approvals {
				by[i] = s.By
			}
			count += ": " + people(by)
		}
		parts = append(parts, count)
	}
	if p.Rejected != nil {
		parts = append(parts, fmt.Sprintf(":x: rejected by <@%s>", p.Rejected.By.ID))
	}
	var line strings.Builder
	for i, part := range parts {
		if line.Len()+len(part)+3 > signoffBudget {
			line.WriteString(" · …")
			break
		}
		if i > 0 {
			line.WriteString(" · ")
		}
		line.WriteString(part)
	}
	return "\n:busts_in_silhouette: " + line.String()
}

// maxPeopleShown bounds the mentions in one part of the progress line.
const maxPeopleShown = 5

func people(ps []aah.Person) string {
	var out []string
	for i, p := range ps {
		if i == maxPeopleShown {
			out = append(out, fmt.Sprintf("+%d more", len(ps)-i))
			break
		}
		out = append(out, "<@"+p.ID+">")
	}
	return strings.Join(out, ", ")
}

package blocks

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/approvalbot/approvalbot/aah"
	"github.com/slack-go/slack"
)

// Standing approvals ("Approve similar…"): the modal that grants one, the
// compact notice posted instead of a request a grant resolved, and the
// /approvals grants listing.

// ActionRevokeGrant is the Revoke button of a standing approval (in the
// notice and the listing); its value is the grant's id and its block id
// GrantsBlockID.
const ActionRevokeGrant = "revoke_grant"

// GrantsBlockID is the block id of standing-approval controls: not one of
// a request's block ids (ParseBlockID rejects it).
const GrantsBlockID = "ab_grants"

// Block and action ids of ModalGrant's duration select.
const (
	BlockDuration  = "duration"
	ActionDuration = "duration"
)

// grantDurations are the durations the modal offers, up to the maximum
// (which is offered too when it is none of them).
var grantDurations = []time.Duration{15 * time.Minute, time.Hour, 4 * time.Hour, 8 * time.Hour, 24 * time.Hour}

// GrantDurations are the durations a reviewer may pick when max is the
// longest allowed (STANDING_APPROVAL_MAX), shortest first.
func GrantDurations(max time.Duration) []time.Duration {
	var out []time.Duration
	for _, d := range grantDurations {
		if d <= max {
			out = append(out, d)
		}
	}
	if max > 0 && !slices.Contains(out, max) {
		out = append(out, max)
	}
	return out
}

// GrantModal approves decision d and grants the agent's action key for a
// chosen while (ModalGrant): a duration select bounded by max, preset to an
// hour or the longest below it, and an optional comment.
func GrantModal(req *aah.Request, d aah.Decision, agent, actionKey string, max time.Duration, ref ModalRef) slack.ModalViewRequest {
	var opts []*slack.OptionBlockObject
	var initial *slack.OptionBlockObject
	for _, dur := range GrantDurations(max) {
		o := slack.NewOptionBlockObject(dur.String(), plainText(humanDuration(dur)), nil)
		opts = append(opts, o)
		if initial == nil || dur <= time.Hour {
			initial = o
		}
	}
	sel := slack.NewOptionsSelectBlockElement(slack.OptTypeStatic, plainText("For how long"), ActionDuration, opts...)
	sel.InitialOption = initial
	duration := slack.NewInputBlock(BlockDuration, plainLabel("Approve similar requests for"), nil, sel)
	explain := fmt.Sprintf("Approve this decision now, and approve agent `%s`'s later `%s` requests at once, as you, "+
		"until the time you pick or until someone revokes it (`/approvals grants`). Requests that need several "+
		"sign-offs, or whose action is irreversible or critical-risk, still come to you.", escape(agent), escape(actionKey))
	blocks := []slack.Block{section(headerLine(req, d)), section(explain), duration, commentInput("", true)}
	return modal(ModalGrant, "Approve similar", "Approve", ref, blocks)
}

// GrantNotice is the compact message posted instead of a request a
// standing approval resolved at once: its title, agent, the grants (action
// key, granter, until when) and a Revoke button each.
func GrantNotice(title, agent string, grants []aah.GrantRef) Message {
	t, _ := fit(title, 200, "…")
	var lines []string
	for _, g := range grants {
		lines = append(lines, fmt.Sprintf("`%s` · approved by <@%s>'s standing approval, until %s",
			escape(g.ActionKey), g.By.ID, slackDate(g.ExpiresAt)))
	}
	out := []slack.Block{
		section(":white_check_mark: *" + escape(t) + "*\n" + strings.Join(lines, "\n")),
		slack.NewContextBlock("", mrkdwn(fmt.Sprintf("Agent `%s` · resolved at once, without a review", escape(agent)))),
	}
	if buttons := revokeButtons(grants); buttons != nil {
		out = append(out, buttons)
	}
	return Message{Text: "Approved by a standing approval: " + t, Blocks: out}
}

// revokeButtons are the Revoke buttons of grants (at most Slack's 25
// elements of an actions block).
func revokeButtons(grants []aah.GrantRef) slack.Block {
	var elems []slack.BlockElement
	for _, g := range grants[:min(len(grants), 25)] {
		b := slack.NewButtonBlockElement(ActionRevokeGrant, g.ID, plainText("Revoke "+g.ActionKey))
		b.Style = slack.StyleDanger
		b.Confirm = confirm("Revoke it?", fmt.Sprintf("Requests of %s's %s will come to reviewers again.",
			plain(g.Agent, 200), plain(g.ActionKey, 200)), "Revoke")
		elems = append(elems, b)
	}
	if len(elems) == 0 {
		return nil
	}
	return slack.NewActionBlock(GrantsBlockID, elems...)
}

// MaxGrantsListed is the most standing approvals /approvals grants shows:
const MaxGrantsListed = 20 // two blocks each, within Slack's 50

// GrantList renders /approvals grants: every live standing approval (action
// key, agent, granter, expiry, comment), each with its Revoke button.
func GrantList(grants []aah.GrantRef, comments map[string]string) Message {
	heading := "*Standing approvals*"
	if len(grants) == 0 {
		return Notice(heading + "\nNone is live. Grant one with *Approve similar…* on a request.")
	}
	out := []slack.Block{section(heading)}
	for _, g := range grants[:min(len(grants), MaxGrantsListed)] {
		text := fmt.Sprintf("`%s` of agent `%s` · by <@%s> · until %s", escape(g.ActionKey), escape(g.Agent), g.By.ID, slackDate(g.ExpiresAt))
		if c := comments[g.ID]; c != "" {
			text += "\n_" + escape(fitted(c, 300)) + "_"
		}
		b := slack.NewButtonBlockElement(ActionRevokeGrant, g.ID, plainText("Revoke"))
		b.Style = slack.StyleDanger
		b.Confirm = confirm("Revoke it?", "Later requests it would approve will come to reviewers again.", "Revoke")
		out = append(out, slack.NewDividerBlock(), slack.NewSectionBlock(mrkdwn(text), nil, slack.NewAccessory(b)))
	}
	if len(grants) > MaxGrantsListed {
		out = append(out, section(fmt.Sprintf("_…and %d more._", len(grants)-MaxGrantsListed)))
	}
	return Message{Text: fmt.Sprintf("Standing approvals: %d", len(grants)), Blocks: out}
}

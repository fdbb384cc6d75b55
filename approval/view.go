package approval

import (
	"github.com/approvalbot/approvalbot/aah"
	"github.com/approvalbot/approvalbot/blocks"
	"github.com/approvalbot/approvalbot/store"
)

// View is what a request's message shows of its record: the request's
// message, its reminder and escalation copies, and "/approvals show" all
// render it, so they cannot disagree. defaults are the workspace's sign-off
// rules, as they apply to the request's agent.
func View(rec store.Record, defaults aah.Defaults) blocks.State {
	st := blocks.State{Status: rec.Status, Version: rec.Version, ReceivedAt: rec.ReceivedAt, Mentions: rec.Mentions,
		Answers: rec.Answers, ResolvedBy: rec.ResolvedBy, EscalatedTo: escalationMentions(rec), Defaults: defaults.For(rec.Agent)}
	switch {
	case !rec.WithdrawnAt.IsZero():
		st.ClosedAt = rec.WithdrawnAt
	case !rec.ResolvedAt.IsZero():
		st.ClosedAt = rec.ResolvedAt
	}
	return st
}

// ListItem is one request as listings show it ("/approvals" and the App
// Home tab).
func ListItem(rec store.Record, req *aah.Request, defaults aah.Defaults) blocks.ListItem {
	return blocks.ListItem{ID: rec.ID, Version: rec.Version, Agent: rec.Agent, Request: req,
		Status: rec.Status, ReceivedAt: rec.ReceivedAt, Answers: rec.Answers, Permalink: rec.Slack.Permalink,
		Defaults: defaults.For(rec.Agent)}
}

// escalationMentions names whom a request was escalated to: users and
// channel ids as Slack links, channel names as text.
func escalationMentions(rec store.Record) []string {
	var out []string
	for _, u := range rec.EscalatedTo {
		out = append(out, "<@"+u+">")
	}
	for _, c := range rec.EscalatedChannels {
		if aah.IsSlackChannelID(c) {
			out = append(out, "<#"+c+">")
		} else {
			out = append(out, blocks.Escape(c))
		}
	}
	return out
}

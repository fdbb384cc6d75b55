package approval

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/approvalbot/approvalbot/aah"
	"github.com/approvalbot/approvalbot/blocks"
	"github.com/approvalbot/approvalbot/store"
)

// View is what a request's message shows of its record: the request's
// message, its reminder and escalation copies, and "/approvals show" all
// render it, so they cannot disagree. defaults are the workspace's sign-off
// rules, as they apply to the request's agent; opts add what the record
// does not hold (the standing-approval limit, the request it follows up).
func View(rec store.Record, defaults aah.Defaults, opts ...ViewOption) blocks.State {
	st := blocks.State{Status: rec.Status, Version: rec.Version, ReceivedAt: rec.ReceivedAt, Mentions: rec.Mentions,
		Answers: rec.Answers, ResolvedBy: rec.ResolvedBy, EscalatedTo: escalationMentions(rec), Defaults: defaults.For(rec.Agent),
		Directive: rec.Directive, Reassignments: rec.Reassignments}
	switch {
	case !rec.WithdrawnAt.IsZero():
		st.ClosedAt = rec.WithdrawnAt
	case !rec.ResolvedAt.IsZero():
		st.ClosedAt = rec.ResolvedAt
	}
	for _, o := range opts {
		o(&st)
	}
	return st
}

// ViewOption adds to a View what its record does not hold.
type ViewOption func(*blocks.State)

// WithGrantMax offers "Approve similar…" for standing approvals of up to
// max (STANDING_APPROVAL_MAX); 0 offers none.
func WithGrantMax(max time.Duration) ViewOption {
	return func(st *blocks.State) { st.GrantMax = max }
}

// WithFollowUp shows the request as a follow-up of f (see FollowUpOf); nil
// shows none.
func WithFollowUp(f *blocks.FollowUp) ViewOption {
	return func(st *blocks.State) { st.FollowUpOf = f }
}

// RequestLoader reads a stored request with its parsed document
// (store.Store.Load).
type RequestLoader interface {
	Load(ctx context.Context, id string) (store.Record, *aah.Request, error)
}

// FollowUpOf finds the earlier request a request follows up: the first of
// its handoff.parent_artifact_ids that names a stored request of the same
// agent (another agent's request is never shown, nor linked, to keep one
// agent from borrowing another's history). nil when none does. An error
// means a lookup failed; the caller shows the request without the line
// rather than hold its message.
func FollowUpOf(ctx context.Context, requests RequestLoader, rec store.Record, req *aah.Request) (*blocks.FollowUp, error) {
	for i, id := range req.Handoff.ParentArtifactIDs {
		if i == maxParentLookups {
			break
		}
		if id == rec.ID {
			continue
		}
		parent, parentReq, err := requests.Load(ctx, id)
		switch {
		case errors.Is(err, store.ErrNotFound), errors.Is(err, store.ErrInvalidDocument):
			continue
		case err != nil:
			return nil, fmt.Errorf("look up parent request %s of %s: %w", id, rec.ID, err)
		case parent.Agent != rec.Agent || parentReq == nil:
			continue
		}
		return &blocks.FollowUp{ID: parent.ID, Title: parentReq.Artifact.Title, Permalink: parent.Slack.Permalink,
			Directive: parent.Directive}, nil
	}
	return nil, nil
}

// maxParentLookups bounds the stored requests one render reads for its
// follow-up line (an agent names its parent first, if it names several).
const maxParentLookups = 5

// ListItem is one request as listings show it ("/approvals" and the App
// Home tab).
func ListItem(rec store.Record, req *aah.Request, defaults aah.Defaults) blocks.ListItem {
	return blocks.ListItem{ID: rec.ID, Version: rec.Version, Agent: rec.Agent, Request: req,
		Status: rec.Status, ReceivedAt: rec.ReceivedAt, Answers: rec.Answers, Permalink: rec.Slack.Permalink,
		Directive: rec.Directive, Defaults: defaults.For(rec.Agent),
		Escalated: rec.Escalated(), EscalatedTo: escalationMentions(rec)}
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

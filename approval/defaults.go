package approval

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/approvalbot/approvalbot/aah"
	"github.com/approvalbot/approvalbot/store"
)

// A request that names nobody who may decide it (no reviewer, group or
// role) is decided by the workspace's default reviewers (Policy.Reviewers
// and ReviewerGroups): the store files it in an index of its own while it
// is open (store.NewRequest.Unnamed), so their "/approvals mine" and Home
// tabs list it beside the requests that name them.

// DefaultReviewer reports whether user is one of the workspace's default
// reviewers, by id, email or user group: a lookup that fails is an error.
// Admins are not default reviewers here: they may decide any request, and
// their lists would hold every one.
func (c *Core) DefaultReviewer(ctx context.Context, user string) (bool, error) {
	if user == "" {
		return false, nil
	}
	m := &matcher{dir: c.dir, user: user}
	ok, err := m.any(ctx, slices.Concat(c.policy.Reviewers, c.policy.ReviewerGroups))
	if err != nil {
		return false, fmt.Errorf("match %s against the default reviewers: %w", user, err)
	}
	return ok, nil
}

// DefaultReviewerIDs are the Slack user ids of the workspace's default
// reviewers: those configured by id, the users of those configured by
// email, and the members of the default reviewer groups. The Home tabs of
// these people show the requests that name nobody. A lookup that fails is
// an error, with the ids found so far.
func (c *Core) DefaultReviewerIDs(ctx context.Context) ([]string, error) {
	var ids []string
	for _, r := range c.policy.Reviewers {
		switch {
		case aah.IsSlackUserID(r):
			ids = append(ids, r)
		case aah.IsEmail(r) && c.dir != nil:
			id, err := c.dir.UserIDByEmail(ctx, strings.ToLower(r))
			if err != nil {
				return ids, fmt.Errorf("look up the Slack user of a default reviewer's email: %w", err)
			}
			if id != "" {
				ids = append(ids, id)
			}
		}
	}
	for _, g := range c.policy.ReviewerGroups {
		if !aah.IsSlackGroupID(g) || c.dir == nil {
			continue
		}
		members, err := c.dir.GroupMembers(ctx, g)
		if err != nil {
			return ids, fmt.Errorf("look up members of default reviewer group %s: %w", g, err)
		}
		ids = append(ids, members...)
	}
	slices.Sort(ids)
	return slices.Compact(ids), nil
}

// HomeAudience is who has rec waiting for them, or had: the people it
// names or was escalated to, those who answered it, and, when it names
// nobody, the default reviewers (DefaultReviewerIDs). Their Home tabs
// follow it. A lookup that fails is an error, with everyone else.
func (c *Core) HomeAudience(ctx context.Context, rec store.Record) ([]string, error) {
	users := rec.HomeAudience()
	if !rec.Unnamed {
		return users, nil
	}
	ids, err := c.DefaultReviewerIDs(ctx)
	return append(users, ids...), err
}

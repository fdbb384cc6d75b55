package approval

import (
	"context"
	"slices"
	"testing"

	"github.com/approvalbot/approvalbot/store"
)

// The default reviewers, by id, email and group, are who decide requests
// naming nobody, and whose lists show them; admins are not listed so.
func TestDefaultReviewers(t *testing.T) {
	policy := Policy{Reviewers: []string{"U0BOB", "riley@example.com", "nobody@example.com"},
		ReviewerGroups: []string{"S0LEADS"}, Admins: []string{"U0CAROL"}}
	c, _ := newCore(store.Record{}, policy)
	ctx := context.Background()
	for user, want := range map[string]bool{"U0BOB": true, "U0RILEY": true, "U0MORGAN": true, "U0ALICE": true,
		"U0CAROL": false, "U0MALLORY": false, "": false} {
		if got, err := c.DefaultReviewer(ctx, user); got != want || err != nil {
			t.Errorf("DefaultReviewer(%q) = %v, %v; want %v", user, got, err, want)
		}
	}
	ids, err := c.DefaultReviewerIDs(ctx)
	if want := []string{"U0ALICE", "U0BOB", "U0MORGAN", "U0RILEY"}; err != nil || !slices.Equal(ids, want) {
		t.Errorf("DefaultReviewerIDs = %v, %v; want %v", ids, err, want)
	}
	// A lookup that fails is an error: nobody is taken for one.
	down := New(newFakeStore(store.Record{}), Options{Directory: failingDirectory{}, Policy: policy})
	if got, err := down.DefaultReviewer(ctx, "U0RILEY"); got || err == nil {
		t.Errorf("DefaultReviewer with Slack down = %v, %v; want false and an error", got, err)
	}
	if ids, err := down.DefaultReviewerIDs(ctx); err == nil || !slices.Equal(ids, []string{"U0BOB"}) {
		t.Errorf("DefaultReviewerIDs with Slack down = %v, %v; want [U0BOB] and an error", ids, err)
	}
}

package approval

import (
	"context"
	"errors"

	"github.com/approvalbot/approvalbot/aah"
	"github.com/approvalbot/approvalbot/store"
)

// Withdraw marks an open request withdrawn on behalf of its agent (the
// API's DELETE). Its message is scheduled for an update, or its post
// cancelled if no attempt at it began; closing cancels its timers (the
// store does that with every close). A request that already left the open states
// is store.ErrNotOpen, returned with the record as it is.
func (c *Core) Withdraw(ctx context.Context, id string) (store.Record, error) {
	var closed store.Record
	rec, err := c.update(ctx, id, func(rec store.Record) (*store.Change, error) {
		if !rec.Status.Open() {
			closed = rec
			return nil, store.ErrNotOpen
		}
		ch := &store.Change{
			Status: aah.StatusWithdrawn, Bump: true, WithdrawnAt: c.now(),
			Audit: []store.AuditEvent{{Event: "withdrawn", Actor: "agent:" + rec.Agent}},
		}
		if !rec.Posted() && rec.Slack.Attempts == 0 {
			// Once an attempt began, Slack may hold its message with the
			// answer lost: the post job's retry then looks for it, adopts
			// it and the sync shows the withdrawal (closedBeforeRecorded);
			// cancelled, nothing would, and it kept its live buttons.
			ch.Cancel = []string{store.JobID(store.JobPost, id)}
		}
		return ch, nil
	})
	if errors.Is(err, store.ErrNotOpen) {
		return closed, store.ErrNotOpen
	}
	return rec, err
}

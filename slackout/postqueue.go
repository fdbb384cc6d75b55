package slackout

import (
	"cmp"
	"context"
	"fmt"
	"time"

	"github.com/approvalbot/approvalbot/jobs"
	"github.com/approvalbot/approvalbot/store"
)

// PostPacing is how a channel's posts are spaced and ordered
// (store.Pacing) at interval (default 1 s), as the post jobs pace them:
// interval apart; a post finding the channel idle waits a
// short settle after its arrival, for an earlier arrival claimed by another
// worker or process to queue first; a post is given its turn up to a lead
// before its slot, so that its call to Slack leaves at the slot itself; a
// post that does not come back for its turn holds up the others a few
// seconds (the grace) past the time it was told to come back at most.
func PostPacing(interval time.Duration) store.Pacing {
	interval = cmp.Or(interval, time.Second)
	return store.Pacing{
		Interval: interval,
		Settle:   min(interval/4, 25*time.Millisecond),
		Lead:     min(interval/4, 25*time.Millisecond),
		Grace:    max(5*time.Second, 4*interval),
	}
}

// takeTurn waits for the post's turn in its channel and returns the time
// of its slot (its call to Slack must not leave earlier). A short wait (the
// settle of a post that found the channel idle) is waited here and the
// turn asked for again; a longer one reschedules the job to the time its
// turn comes, as a free retry.
func (p *poster) takeTurn(ctx context.Context, turn store.PostTurn) (time.Time, error) {
	for asked := 0; ; asked++ {
		tr, err := p.opts.Store.TakePostTurn(ctx, turn, p.pacing)
		if err != nil {
			return time.Time{}, err
		}
		if tr.Taken {
			return p.opts.Now().Add(tr.Wait), nil
		}
		if asked >= 2 || tr.Wait > p.pacing.Lead {
			p.opts.Metrics.posts.WithLabelValues("paced").Inc()
			return time.Time{}, &jobs.RetryError{After: tr.Wait, Free: true, Reason: "waiting for its turn to post to " + turn.Channel}
		}
		if err := sleepUntil(ctx, p.opts.Now, p.opts.Now().Add(tr.Wait)); err != nil {
			return time.Time{}, err
		}
	}
}

// endTurn ends the post's turn in its channel. Should that fail, the turn
// is held until Pacing.Grace has passed: the channel waits, it is not
// wedged.
//
// It hands the turn to the post now first in the queue: that post's job is
// made due when the next slot opens, and this process's runner woken, so a
// channel's posts follow each other without waiting for the times they
// were told (estimates: should the hand-off be lost, they still come back
// then).
func (p *poster) endTurn(ctx context.Context, turn store.PostTurn) {
	next, err := p.opts.Store.EndPostTurn(ctx, turn)
	if err != nil {
		p.log.WarnContext(ctx, "could not end the post's turn; the channel waits until it lapses", "request_id", turn.ID, "err", err)
		return
	}
	if next == "" || next == turn.ID {
		return
	}
	if err := p.opts.Store.PullPostJob(ctx, next, p.opts.Now().Add(p.pacing.Interval)); err != nil {
		p.log.WarnContext(ctx, "could not hand the channel's turn on; the next post comes back when it was told", "request_id", next, "err", err)
		return
	}
	if p.opts.Wake != nil {
		p.opts.Wake(next)
	}
}

// sleepUntil waits until at on the clock now, or until ctx ends.
func sleepUntil(ctx context.Context, now func() time.Time, at time.Time) error {
	d := at.Sub(now())
	if d <= 0 {
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return fmt.Errorf("slackout: wait for the post's slot: %w", ctx.Err())
	case <-t.C:
		return nil
	}
}

// arrival is when a post's request was accepted, which orders its channel's
// queue. The job's first due time is exactly that, to the microsecond
// (store.NewRequest schedules it so), while the record keeps milliseconds:
// the due time is used while it is the first one, so that requests
// accepted in one millisecond keep their order.
func arrival(j store.Job, rec store.Record) time.Time {
	if j.Due.UnixMilli() == rec.ReceivedAt.UnixMilli() {
		return j.Due
	}
	return rec.ReceivedAt
}

// noteChannelID notes the id Slack reported for a channel configured by
// name, once per process and name, not at every post.
func (p *poster) noteChannelID(ctx context.Context, name, id string) {
	if id == name {
		return
	}
	if known, ok := p.channelIDs.Load(name); ok && known == id {
		return
	}
	if err := p.opts.Store.NoteChannelID(context.WithoutCancel(ctx), name, id); err != nil {
		p.log.WarnContext(ctx, "could not note the channel's id", "channel", name, "err", err)
		return
	}
	p.channelIDs.Store(name, id)
}

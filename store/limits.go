package store

import (
	"context"
	"fmt"
	"time"

	"github.com/approvalbot/approvalbot/aah"
	"github.com/redis/go-redis/v9"
)

// Per-agent intake limits (INTAKE_RATE, INTAKE_MAX_OPEN): the state is in
// Redis, not in each process, so every replica serving the API counts the
// same agent against the same limit. The bucket's script, takeToken, is
// with the rest in scripts.go.

// Rate is a token bucket: Burst tokens at most, refilled at Count tokens
// per Per. The zero Rate (Count 0) is no limit.
type Rate struct {
	Count int
	Per   time.Duration
	Burst int
}

// Off reports whether r limits nothing.
func (r Rate) Off() bool { return r.Count <= 0 || r.Per <= 0 || r.Burst <= 0 }

// RateDecision is the bucket's answer to one request.
type RateDecision struct {
	Allowed bool
	// Remaining is the whole tokens left after this request.
	Remaining int64
	// Wait is how long until a token is available again (0 when allowed).
	Wait time.Duration
}

// TakeIntakeToken takes one token from agent's intake bucket under rate,
// shared by every process. An Off rate always allows.
func (s *Store) TakeIntakeToken(ctx context.Context, agent string, rate Rate) (RateDecision, error) {
	if rate.Off() {
		return RateDecision{Allowed: true}, nil
	}
	per := max(rate.Per.Milliseconds(), 1)
	res, err := takeToken.Run(ctx, s.rdb, []string{s.keys.rate(agent)}, s.nowMs(), per, rate.Count, rate.Burst).Int64Slice()
	if err != nil {
		return RateDecision{}, fmt.Errorf("store: take an intake token of %s: %w", agent, err)
	}
	if len(res) != 3 {
		return RateDecision{}, fmt.Errorf("store: take an intake token of %s: unexpected answer %v", agent, res)
	}
	return RateDecision{Allowed: res[0] == 1, Remaining: res[1], Wait: time.Duration(res[2]) * time.Millisecond}, nil
}

// OpenRequests counts agent's open requests (pending, partial, escalated)
// from its per-status indexes in every shard, in one pipeline. It is a
// snapshot: requests created or closed meanwhile may or may not count.
func (s *Store) OpenRequests(ctx context.Context, agent string) (int64, error) {
	var open []aah.Status
	for _, st := range aah.Statuses {
		if st.Open() {
			open = append(open, st)
		}
	}
	cmds := make([]*redis.IntCmd, 0, Shards*len(open))
	_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for shard := range Shards {
			for _, st := range open {
				cmds = append(cmds, p.ZCard(ctx, s.keys.agentIndex(shard, agent, st)))
			}
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("store: count the open requests of %s: %w", agent, err)
	}
	var n int64
	for _, c := range cmds {
		n += c.Val()
	}
	return n, nil
}

package store

import (
	"context"

	"github.com/redis/go-redis/v9"
)

// Intake's scripts go through go-redis's automatic pipeliner (issue #17):
// the commands of concurrent requests are coalesced into one pipeline per
// round trip instead of one round trip each, which under load saves both
// processes most of their per-command system calls (a write and a read on
// each side) and Redis its per-round-trip event-loop work: about a sixth
// of intake's CPU (BENCHMARKS.md). Each command's outcome is its own, as on
// a plain connection. Alone, a command is sent at once: it waits for
// nobody.
//
// Up to pipelinedBatches batches are in flight at once, so commands sent
// together may run in either order. Intake's never depend on it: a request
// waits for its limits' answer before it stores anything, and what it
// sends together (its write and its post's queuing) are in different slots,
// run on different nodes of a Cluster anyway; it answers only once both
// have.
//
// The pipeliner runs its batches on its own context, bounded by the
// client's read and write timeouts; a caller stops waiting when its own
// context ends (intake's store deadline), and its command's outcome is
// then unknown, as it is when a plain connection times out.
//
// The pipeliner belongs to the client (created on first use, closed with
// it). A client without one (a Ring, or a test's wrapper) is used as it is.

// pipelinedBatches: with one batch at a time (go-redis's default, an
// ordered stream) the requests queue behind each round trip; four keep
// both cores busy.
const pipelinedBatches = 4

// autoPipeliner is what *redis.Client and *redis.ClusterClient offer.
type autoPipeliner interface {
	AsyncAutoPipelineWithOptions(*redis.AutoPipelineOptions) (*redis.AutoPipeliner, error)
}

// autoPipelined returns rdb's deferred auto-pipeliner, nil when it has none.
func autoPipelined(rdb redis.UniversalClient) *redis.AutoPipeliner {
	c, ok := rdb.(autoPipeliner)
	if !ok {
		return nil
	}
	ap, err := c.AsyncAutoPipelineWithOptions(&redis.AutoPipelineOptions{MaxConcurrentBatches: pipelinedBatches, Unordered: true})
	if err != nil { // only for an invalid configuration, which the default is not
		return nil
	}
	return ap
}

// sentScript is a script call on its way: wait reads its answer.
type sentScript struct {
	cmd    *redis.Cmd
	future redis.AutoFuture
	queued bool // through the pipeliner
}

// sendScript sends script's EVALSHA without waiting for its answer: calls
// sent one after the other go in one round trip (when they reach the same
// node). Without a pipeliner it runs at once.
func (s *Store) sendScript(ctx context.Context, script *redis.Script, keys []string, args ...any) sentScript {
	if s.batched == nil {
		return sentScript{cmd: script.EvalSha(ctx, s.rdb, keys, args...)}
	}
	cmdArgs := make([]any, 0, 3+len(keys)+len(args))
	cmdArgs = append(cmdArgs, "evalsha", script.Hash(), len(keys))
	for _, k := range keys {
		cmdArgs = append(cmdArgs, k)
	}
	cmdArgs = append(cmdArgs, args...)
	cmd := redis.NewCmd(ctx, cmdArgs...)
	return sentScript{cmd: cmd, future: s.batched.Submit(ctx, cmd), queued: true}
}

// wait returns the call's answer, or ctx's error once ctx ends first. A
// script the server no longer holds (NOSCRIPT: a restart, SCRIPT FLUSH) is
// loaded and run again, as Script.Run does.
func (c sentScript) wait(ctx context.Context, s *Store, script *redis.Script, keys []string, args ...any) *redis.Cmd {
	if c.queued {
		if err := c.future.WaitContext(ctx); err != nil && ctx.Err() != nil {
			// The command may still run: its outcome is unknown.
			cmd := redis.NewCmd(ctx)
			cmd.SetErr(ctx.Err())
			return cmd
		}
	}
	if redis.HasErrorPrefix(c.cmd.Err(), "NOSCRIPT") {
		return script.Run(ctx, s.rdb, keys, args...)
	}
	return c.cmd
}

// runScript runs script through the pipeliner and waits for its answer.
func (s *Store) runScript(ctx context.Context, script *redis.Script, keys []string, args ...any) *redis.Cmd {
	return s.sendScript(ctx, script, keys, args...).wait(ctx, s, script, keys, args...)
}

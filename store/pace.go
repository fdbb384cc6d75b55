package store

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// Pacing of Slack calls across every bot process: posts to one channel are
// spaced (Slack allows about one message per second per channel) and leave
// in the order their requests arrived, and a 429 holds a channel, or a
// method whose limit counts per app, for every process until its
// Retry-After has passed. The state is in Redis, not in each process,
// because Slack's limits count the app, whichever process calls.
//
// A channel's waiting posts form a FIFO (a zset scored by arrival). A post
// job asks for its turn (TakePostTurn): the head of the queue takes it when
// the channel's next slot is at most a lead away; anyone else is told when
// its turn will come (the next slot plus one interval per post ahead of it),
// and its job is rescheduled to exactly then, as a free retry. So a burst
// costs one or two runs per post instead of a retry per post per poll, and
// no worker, in whichever process, can overtake an earlier arrival: the
// order is the queue's, not the order jobs happen to be claimed in.
//
// One post holds the turn at a time, until its call to Slack has ended
// (EndPostTurn): the next slot is an interval after that end, so two posts
// reach Slack at least the interval apart however long each call or the
// steps before it took. A holder that never ends its turn (its process
// died) stops holding it after Pacing.Grace: it wastes that time, it does
// not wedge the channel.

// PostTurn names a post waiting for its turn in its channel.
type PostTurn struct {
	Channel string
	ID      string // the request's id
	// Arrival orders the queue: when the request was accepted. Intake
	// schedules the post job at that moment to the microsecond, so two
	// requests accepted in one millisecond keep their order.
	Arrival time.Time
}

// Pacing says how a channel's posts are spaced.
type Pacing struct {
	// Interval is the least time between the end of one post's call to
	// Slack and the start of the next one's.
	Interval time.Duration
	// Settle is how long a post that finds the channel idle waits after
	// its arrival before it goes: long enough for an earlier arrival,
	// claimed by another worker or process, to have queued first.
	Settle time.Duration
	// Lead is how early a post is given its turn, so that its last steps
	// (recording mentions, counting the attempt, rendering) happen before
	// its slot and its call to Slack leaves at the slot itself. Posts
	// waiting are told to come back about this much before their slots.
	Lead time.Duration
	// Grace is how long past the time it was told to come back a post may
	// stay away before it stops holding up the posts behind it (its job
	// was cancelled, dead-lettered or lost with its worker), and how long
	// a turn is held at most. Should the post come back later it queues
	// again in its place by arrival.
	Grace time.Duration
}

// takePostTurn queues a post in its channel's FIFO (if not queued) and
// gives it its turn when it is at the head, no other post holds the turn,
// the channel's next slot is at most a lead away, and the head has settled.
//
//	KEYS[1] -> <p>:pace:{<channel>}     hash: t, h, p, pu, c, x, w:<id> (keys.go)
//	KEYS[2] -> <p>:pace:{<channel>}:q   zset: id -> arrival ms
//	ARGV[1] -> now, Unix ms
//	ARGV[2] -> interval, ms
//	ARGV[3] -> request id
//	ARGV[4] -> arrival, Unix ms (with a fraction)
//	ARGV[5] -> settle, ms
//	ARGV[6] -> grace, ms
//	ARGV[7] -> lead, ms
//	ARGV[8] -> "1" to queue the post and ask only (intake, queuePostArgs):
//	           the turn is never taken, and the queue is kept at least ARGV[9]
//	           ms; "2" to queue it and no more (the store was told no pacing:
//	           ARGV[1], ARGV[2] and ARGV[5..7] are unused)
//	ARGV[9] -> ask only or queue only: the least TTL of the queue, ms
//
// Returns {1, ms until its slot, added} when the post has its turn (it left
// the queue and holds the turn until EndPostTurn), {0, ms until it should
// ask again, added} otherwise; asking only, {2, 0, added} where it would
// have had its turn (or will, within a lead). added is 1 when the post was
// not in the queue before.
var takePostTurn = redis.NewScript(takePostTurnSrc)

const takePostTurnSrc = `
local now, iv, settle, grace, lead = ARGV[1] + 0, ARGV[2] + 0, ARGV[5] + 0, ARGV[6] + 0, ARGV[7] + 0
local id, askOnly = ARGV[3], ARGV[8] == '1'
local added = redis.call('ZADD', KEYS[2], 'NX', ARGV[4], id)
if ARGV[8] == '2' then
  if redis.call('PTTL', KEYS[2]) < tonumber(ARGV[9]) then redis.call('PEXPIRE', KEYS[2], ARGV[9]) end
  return {2, 0, added}
end
local head = redis.call('ZRANGE', KEYS[2], '0', '0', 'WITHSCORES')
-- A head past the time it was told and a grace stopped waiting: the posts
-- that ask for their turn drop it, intake (asking only) does not. Counted
-- ahead of a new post, k such heads make intake tell that post a turn
-- about 2k posts' time late (k per, and as much again up to a grace: see
-- at below), where it could have gone at once; its job, asking then, drops
-- them and goes. Rare (each such head's job was lost), where the call
-- saved is every request's.
if not askOnly then
  for _ = 1, 100 do
    if head[1] == id then break end
    local back = tonumber(redis.call('HGET', KEYS[1], 'w:' .. head[1]) or head[2])
    if back + grace > now then break end
    redis.call('ZREM', KEYS[2], head[1])
    redis.call('HDEL', KEYS[1], 'w:' .. head[1])
    head = redis.call('ZRANGE', KEYS[2], '0', '0', 'WITHSCORES')
  end
end
local st = redis.call('HMGET', KEYS[1], 't', 'h', 'p', 'pu', 'c', 'x')
local slot = math.max((st[1] or 0) + iv, (st[2] or 0) + 0)
local busy = st[3] and tonumber(st[4]) + grace > now
if st[3] and not busy then redis.call('HDEL', KEYS[1], 'p', 'pu') end
local ready = head[2] + settle
local rank = redis.call('ZRANK', KEYS[2], id)
-- The queue's keys live as long as its last post may wait, and more. Asked
-- at intake, the post just queued is the newest (its rank the queue's
-- length less one, but for clocks apart by a few ms, which the minute
-- spare covers) and the queue never loses the TTL it had.
local waiting
if askOnly then waiting = rank + 1 else waiting = redis.call('ZCARD', KEYS[2]) end
local ttl = math.ceil(math.max(slot - now, 0) + (waiting + 1) * iv + 2 * grace + 60000)
-- expire sets a key's TTL; asking only, it never shortens the TTL the key
-- had: PEXPIRE GT, one call where PTTL and PEXPIRE were two, as the TTL a
-- new post asks for is nearly always the longer. GT leaves a key without a
-- TTL (one just created) as it is, and Redis before 7.0 refuses it (6.2 is
-- supported: docs/deploy.md): then PTTL says what to do.
local ttlArg
local function expire(key)
  if not askOnly then
    redis.call('PEXPIRE', key, ttlArg)
    return
  end
  local set = redis.pcall('PEXPIRE', key, ttlArg, 'GT')
  if set == 1 then return end
  local cur = redis.call('PTTL', key)
  if cur == -1 or (set ~= 0 and cur >= 0 and cur < ttl) then redis.call('PEXPIRE', key, ttlArg) end
end
-- x is a time until which both keys are known to live: every TTL this
-- script sets is recorded there with it (endPostTurn and holdPace only
-- lengthen the hash's, and give the queue the hash's). It is in the
-- callers' clocks, as every time the pacing keeps: a process whose clock
-- runs ahead overstates it by as much, which the hour intake gives a queue
-- at least (ARGV[9]) absorbs. Asked at intake, the TTLs are set only when
-- x falls short of what this post needs, or the queue is new (this post is
-- its head: an emptied queue is deleted, and made again without a TTL),
-- and then with renewSpareMs more, so that the posts queued after it need
-- no call of their own (issue #17: two calls of every create's).
local renew = true
if askOnly then
  ttl = math.max(ttl, ARGV[9] + 0)
  renew = rank == 0 or (st[6] or 0) + 0 < now + ttl
  if renew then ttl = ttl + ` + renewSpareMs + ` end
end
-- Numbers go to Redis as strings made here: a Lua number passed to
-- redis.call is written with %.17g, several times the cost of %d.
ttlArg = string.format('%d', ttl)
local lastsUntil = string.format('%d', now + ttl)
if renew then expire(KEYS[2]) end
-- goesNext: first in the queue, nobody holding the turn, the slot within a lead.
local goesNext = rank == 0 and not busy and slot <= now + lead
if askOnly and goesNext then
  -- (renew: rank 0.) Both keys now live at least until now + ttl, so an
  -- x no later than that stays true, and the posts queued behind this one
  -- record theirs. A later x is lowered: the queue may be new (the one x
  -- was kept for emptied and deleted), with no more than this TTL.
  if (st[6] or 0) + 0 > now + ttl then redis.call('HSET', KEYS[1], 'x', lastsUntil) end
  expire(KEYS[1])
  return {2, 0, added}
end
if goesNext and ready <= now then
  local at = math.max(slot, now)
  redis.call('ZREM', KEYS[2], id)
  redis.call('HDEL', KEYS[1], 'w:' .. id)
  -- b: the post arrived before the last turn ended, so it waited for it
  -- (the channel is busy): its end measures what a post takes here
  -- (endPostTurn's c).
  redis.call('HSET', KEYS[1], 'p', id, 'pu', string.format('%.3f', at), 'b', (tonumber(ARGV[4]) < tonumber(st[1] or '0')) and '1' or '0', 'x', lastsUntil)
  redis.call('PEXPIRE', KEYS[1], ttlArg)
  return {1, math.ceil(at - now), added}
end
-- The holder's slot plus an interval is the earliest the next one can go
-- (its call takes some time too). A holder late past that is asked after
-- again in a lead, or as long as it is late already (up to four leads), so
-- a slow call costs the head a few asks, not one per lead. Every post is told the earliest
-- its turn can come: one told too early is told again, cheaply, while one
-- told too late would leave the channel idle.
if busy then
  local due = tonumber(st[4]) + iv
  slot = math.max(slot, due, now + 1.5 * lead + math.min(math.max(now - due, 0), 4 * lead))
end
-- Each post ahead takes what the last one took from turn to turn (at least
-- an interval): telling the posts far back in the queue to come back an
-- interval apart would bring them back long before their turns, again and
-- again, ahead of the head's own job in the job queue. Late costs nothing:
-- the post ending its turn hands it to the next (PullPostJob).
local per = math.max(iv, tonumber(st[5] or '0'))
local at = math.max(slot, now, ready) + rank * per
-- Asked at intake, a post is told a later time still: the turn is handed
-- to it (PullPostJob) when it comes, and the time it is told is only what
-- its job falls back on should that hand-off be lost. Told the estimate,
-- a post would often come back before its turn (the estimate is what the
-- last posts took, and a channel falling behind takes longer), run, and be
-- told again: a run of the job runner for nothing, when it can least
-- afford one. At most a grace later: a post whose create failed never
-- comes, and the others wait for it until the time it was told and a grace.
if askOnly then at = at + math.min((rank + (busy and 1 or 0)) * per, grace) end
-- The hash's TTL is set once its last write is done (each way out above
-- sets it too): the HSET may have created it (then x was missing: renew).
if renew then
  redis.call('HSET', KEYS[1], 'w:' .. id, string.format('%.3f', at), 'x', lastsUntil)
  expire(KEYS[1])
else
  redis.call('HSET', KEYS[1], 'w:' .. id, string.format('%.3f', at))
end
local back = at - lead / 2
if goesNext then back = ready end
local wait = math.max(math.ceil(back - now), 1)
return {0, wait, added}
`

// endPostTurn ends the turn of the post that holds it: its call to Slack
// has ended (or it will not call), and the channel's next slot is an
// interval from now. Optionally it puts the post back in its place by
// arrival, to come back after ARGV[5] ms (it sent nothing).
//
//	KEYS[1], KEYS[2] -> as takePostTurn's
//	ARGV[1] -> now, Unix ms, with a fraction (the next slot is an interval
//	           from it: truncated, it could come up to 1ms early)
//	ARGV[2] -> request id
//	ARGV[3] -> "1" to put the post back in the queue
//	ARGV[4] -> arrival, Unix ms (when put back)
//	ARGV[5] -> ms until it comes back (when put back)
//
// Returns the post now at the head of the queue ("" when none): the
// caller hands it the turn by making its job due (PullPostJob).
var endPostTurn = redis.NewScript(`
local now = tonumber(ARGV[1])
local st = redis.call('HMGET', KEYS[1], 'p', 't', 'b')
local mine = st[1] == ARGV[2]
if mine then redis.call('HDEL', KEYS[1], 'p', 'pu', 'b') end
local last = tonumber(st[2] or '0')
if last < now then
  redis.call('HSET', KEYS[1], 't', string.format('%.3f', now))
  -- In a busy channel (the post waited for the last turn to end), the
  -- time from the previous turn's end to this one's (at most 10 s): what a
  -- post really takes in this channel, job queue included, which the posts
  -- waiting are told to expect per post ahead of them. After an idle
  -- spell it measures nothing: no estimate then (an interval per post).
  if mine and st[3] == '1' and last > 0 then
    redis.call('HSET', KEYS[1], 'c', string.format('%.3f', math.min(now - last, 10000)))
  elseif mine then
    redis.call('HDEL', KEYS[1], 'c')
  end
end
if ARGV[3] == '1' then
  redis.call('ZADD', KEYS[2], 'NX', ARGV[4], ARGV[2])
  redis.call('HSET', KEYS[1], 'w:' .. ARGV[2], string.format('%.3f', now + tonumber(ARGV[5])))
end
local ttl = math.max(redis.call('PTTL', KEYS[1]), tonumber(ARGV[5]) + 60000)
redis.call('PEXPIRE', KEYS[1], ttl)
if redis.call('EXISTS', KEYS[2]) == 1 then redis.call('PEXPIRE', KEYS[2], ttl) end
return redis.call('ZRANGE', KEYS[2], 0, 0)[1] or ''
`)

// renewSpareMs is how much longer than the post needs intake makes a
// channel's keys live when it renews their TTLs (takePostTurn's x): the
// posts queued after it need none until ten minutes have passed, or ten
// minutes' worth of posts queued behind it.
const renewSpareMs = "600000"

// leavePostQueue removes a post from its channel's queue (it will not be
// posted, or was posted by an earlier run).
//
//	KEYS[1], KEYS[2] -> as takePostTurn's
//	ARGV[1] -> request id
//
// Returns the post now at the head of the queue when no post holds the
// turn ("" otherwise, or when none waits): the caller hands it the turn.
var leavePostQueue = redis.NewScript(`
redis.call('ZREM', KEYS[2], ARGV[1])
redis.call('HDEL', KEYS[1], 'w:' .. ARGV[1])
if redis.call('HEXISTS', KEYS[1], 'p') == 1 then return '' end
return redis.call('ZRANGE', KEYS[2], 0, 0)[1] or ''
`)

// holdPace holds a channel until ARGV[1] + ARGV[2] ms (after a 429), never
// shortening a hold. Every slot is computed from the hold, so the posts
// waiting are shifted after it as they come back.
//
//	KEYS[1] -> <p>:pace:{<channel>}
//	ARGV[1] -> now, Unix ms
//	ARGV[2] -> hold, ms
//
// Returns -1.
var holdPace = redis.NewScript(`
local untilMs = tonumber(ARGV[1]) + tonumber(ARGV[2])
if tonumber(redis.call('HGET', KEYS[1], 'h') or '0') < untilMs then
  redis.call('HSET', KEYS[1], 'h', untilMs)
end
if redis.call('PTTL', KEYS[1]) < tonumber(ARGV[2]) + 60000 then
  redis.call('PEXPIRE', KEYS[1], tonumber(ARGV[2]) + 60000)
end
return -1
`)

func (s *Store) paceKeys(channel string) []string {
	return []string{s.keys.pace(channel), s.keys.paceQueue(channel)}
}

// arrivalMs is t in Unix ms with its microseconds as a fraction.
func arrivalMs(t time.Time) string {
	return strconv.FormatFloat(float64(t.UnixMicro())/1000, 'f', 3, 64)
}

// Turn is TakePostTurn's answer.
type Turn struct {
	// Taken: the post holds its channel's turn and may call Slack once
	// Wait has passed (its slot, at most Pacing.Lead away), not before;
	// it must then end the turn (EndPostTurn). Otherwise it should ask
	// again after Wait: then its turn should have come, unless a 429 or
	// a slow post ahead of it moved the queue on.
	Taken bool
	Wait  time.Duration
}

// TakePostTurn queues the post in its channel's FIFO, if it is not queued
// yet, and gives it the channel's turn when it is at the head of the queue
// and the channel is free (or will be within Pacing.Lead).
func (s *Store) TakePostTurn(ctx context.Context, t PostTurn, p Pacing) (Turn, error) {
	res, err := takePostTurn.Run(ctx, s.rdb, s.paceKeys(t.Channel), s.nowMs(),
		max(p.Interval.Milliseconds(), 1), t.ID, arrivalMs(t.Arrival),
		p.Settle.Milliseconds(), p.Grace.Milliseconds(), p.Lead.Milliseconds(), "0", 0).Int64Slice()
	if err == nil && len(res) != 3 {
		err = fmt.Errorf("unexpected answer %v", res)
	}
	if err != nil {
		return Turn{}, fmt.Errorf("store: take the turn of %s in %s: %w", t.ID, t.Channel, err)
	}
	return Turn{Taken: res[0] == 1, Wait: time.Duration(res[1]) * time.Millisecond}, nil
}

// EndPostTurn ends the turn a post took: its call to Slack has ended, or it
// will make none. The channel's next post goes an interval later: next is
// the request whose post is now first in the queue ("" when none), to hand
// the turn to (PullPostJob).
func (s *Store) EndPostTurn(ctx context.Context, t PostTurn) (next string, err error) {
	next, err = endPostTurn.Run(ctx, s.rdb, s.paceKeys(t.Channel), arrivalMs(s.now()), t.ID, "0", "0", 0).Text()
	if err != nil {
		return "", fmt.Errorf("store: end the turn of %s in %s: %w", t.ID, t.Channel, err)
	}
	return next, nil
}

// PullPostJob makes the post job of request id due at at, its slot: the
// turn is handed to it as soon as it is its, instead of when it was told to
// come back (or deferred to by its create, deferPost). A job running is
// left alone. A job due sooner is moved too, to its slot, where it would
// have waited anyway: so a pulled job is never due at its arrival still,
// which deferPost takes for "nothing moved it".
func (s *Store) PullPostJob(ctx context.Context, id string, at time.Time) error {
	z := redis.Z{Score: float64(at.UnixMilli()), Member: jobID(JobPost, id)}
	if err := s.rdb.ZAddArgs(ctx, s.keys.jobs(shardOf(id)).due, redis.ZAddArgs{XX: true, Members: []redis.Z{z}}).Err(); err != nil {
		return fmt.Errorf("store: hand the turn to the post of %s: %w", id, err)
	}
	return nil
}

// ReturnPostTurn ends the turn of a post that certainly sent nothing
// (Slack refused it, or it failed before calling Slack) and puts it back in
// its place by arrival, ahead of the posts that arrived after it; it is
// expected back after back.
func (s *Store) ReturnPostTurn(ctx context.Context, t PostTurn, back time.Duration) error {
	err := endPostTurn.Run(ctx, s.rdb, s.paceKeys(t.Channel), arrivalMs(s.now()), t.ID, "1", arrivalMs(t.Arrival),
		max(back.Milliseconds(), 0)).Err()
	if err != nil {
		return fmt.Errorf("store: return the turn of %s in %s: %w", t.ID, t.Channel, err)
	}
	return nil
}

// LeavePostQueue removes a post from its channel's queue: its request will
// not be posted (it closed first), or is posted already.
//
// A post waiting behind it while the channel is idle gets the turn at once
// (its job made due, as EndPostTurn's caller does): the post it waited for
// will not come to hand it on.
func (s *Store) LeavePostQueue(ctx context.Context, t PostTurn) error {
	next, err := leavePostQueue.Run(ctx, s.rdb, s.paceKeys(t.Channel), t.ID).Text()
	if err != nil {
		return fmt.Errorf("store: remove %s from the queue of %s: %w", t.ID, t.Channel, err)
	}
	if next != "" && next != t.ID {
		return s.PullPostJob(ctx, next, s.now())
	}
	return nil
}

// HoldChannel stops every process posting to channel for at least d (Slack
// answered 429 for it).
func (s *Store) HoldChannel(ctx context.Context, channel string, d time.Duration) error {
	if err := holdPace.Run(ctx, s.rdb, []string{s.keys.pace(channel)}, s.nowMs(), max(d.Milliseconds(), 1)).Err(); err != nil {
		return fmt.Errorf("store: hold channel %s: %w", channel, err)
	}
	return nil
}

// holdMethod holds a Slack method until ARGV[1] + ARGV[2] ms, never
// shortening a hold. The value is the hold's end (so it holds even where
// TTLs do not count down); the TTL only cleans up.
//
//	KEYS[1] -> <p>:hold:<Slack method>
//	ARGV[1] -> now, Unix ms
//	ARGV[2] -> hold, ms
var holdMethod = redis.NewScript(`
local untilMs = tonumber(ARGV[1]) + tonumber(ARGV[2])
if tonumber(redis.call('GET', KEYS[1]) or '0') < untilMs then
  redis.call('SET', KEYS[1], untilMs, 'PX', ARGV[2])
end
return 0
`)

// HoldMethod stops every process calling a Slack method for at least d
// (Slack answered 429 for it, and its limits count per app).
func (s *Store) HoldMethod(ctx context.Context, method string, d time.Duration) error {
	if err := holdMethod.Run(ctx, s.rdb, []string{s.keys.hold(method)}, s.nowMs(), max(d.Milliseconds(), 1)).Err(); err != nil {
		return fmt.Errorf("store: hold %s: %w", method, err)
	}
	return nil
}

// MethodHeld returns how long a Slack method is still held, 0 when it is not.
func (s *Store) MethodHeld(ctx context.Context, method string) (time.Duration, error) {
	untilMs, err := s.rdb.Get(ctx, s.keys.hold(method)).Int64()
	if errors.Is(err, redis.Nil) {
		return 0, nil
	} else if err != nil {
		return 0, fmt.Errorf("store: read the hold of %s: %w", method, err)
	}
	return max(time.Duration(untilMs-s.nowMs())*time.Millisecond, 0), nil
}

package store

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// A new request's post, queued in its channel with its create: on one
// Redis node in the create's own script (createAndQueue); on a Cluster,
// where the channel's queue is another node's, a round trip later, its job
// deferred to its turn off the create's path (deferPostJob).

// applyQueued applies a create and queues its post in its channel's FIFO
// (by the arrival its post job is due at, to the microsecond), before
// intake answers: so a request accepted after it can never be posted first,
// however the post jobs are claimed. turnIn is, when posts are ahead of
// it, how long until its turn should come (queuedPost): on one node the
// queuing script made the post's job due then itself; on a Cluster the
// create defers it (deferPostJob).
//
// The post job exists before the post is in the queue, so a post handed
// the turn (PullPostJob, which moves only a job that exists) as soon as it
// is queued is never missed. On one Redis node the two are one script
// (createAndQueue); on a Cluster the queue is another node's, so the post
// is queued once the write has applied, a round trip later. Should the
// queuing fail, the post job queues itself when it runs (TakePostTurn).
//
// admit, when set, is the agent's limits (one Redis node only; see
// Admission), applied by the same script before the create's guards:
// limits is their answer, nil when the script did not answer.
func (s *Store) applyQueued(ctx context.Context, reqKey string, w write, turn PostTurn, admit *admitCall) (cursor string, turnIn time.Duration, limits []any, err error) {
	if _, cluster := s.rdb.(*redis.ClusterClient); cluster {
		// (Never with admit: a Cluster's Create admits first.)
		qKeys, qArgs := s.queuePostArgs(turn)
		if cursor, err = s.apply(ctx, reqKey, w); err != nil {
			return cursor, 0, nil, err
		}
		answer, _ := takePostTurn.Run(ctx, s.rdb, qKeys, qArgs...).Int64Slice()
		turnIn = queuedPost(answer)
		return cursor, turnIn, nil, nil
	}
	// One node: the limits' keys, the channel's queue and the request's
	// shard are in as many slots, which one node serves alike. The limits,
	// the write and the queuing are one script (createAndQueue).
	ctx = oneNodeOnly(ctx)
	keys, keyWords, argv := w.args(reqKey)
	qKeys, qArgs := s.queuePostArgs(turn)
	if len(qKeys) != turnWords[0] || len(qArgs) != turnWords[1] {
		return "", 0, nil, fmt.Errorf("store: the post's queuing has %d keys and %d arguments, not the %d and %d createAndQueue reads",
			len(qKeys), len(qArgs), turnWords[0], turnWords[1])
	}
	jobsKey := s.keys.jobs(shardOf(turn.ID)).due
	postAt, homeAt := jobDueAt(argv, jobsKey, jobID(JobPost, turn.ID)), 0
	if s.homeJobs {
		homeAt = jobDueAt(argv, jobsKey, jobID(JobHome, turn.ID))
	}
	limitsKind, confirmed := "0", "0"
	var lKeys []string
	var lArgs []any
	if admit != nil {
		limitsKind, lKeys, lArgs = "1", admit.keys, admit.args
		if admit.reserveFirst {
			limitsKind = "2"
		}
		if want := limitsWords[limitsKind]; len(lKeys) != want[0] || len(lArgs) != want[1] {
			return "", 0, nil, fmt.Errorf("store: the limits' call has %d keys and %d arguments, not the %d and %d createAndQueue reads",
				len(lKeys), len(lArgs), want[0], want[1])
		}
		// Confirmed as of the reservation's deadline, not now: a member
		// Held (one outliving a deleted request of this id) had a score
		// confirmed before, which a reconcile may have read and would
		// remove the member by. Now could equal that score on a coarse or
		// stopped clock; the deadline is a lease later than the time its
		// reservation was made, so it equals a score confirmed by the
		// process clock only on a clock gone back a lease, and one
		// confirmed by an earlier create's script only if the two
		// reservations were made in the same millisecond (that create, the
		// request's close, its deletion and this resubmission within it).
		confirmed = confirmedScore(admit.slot.score)
	}
	// The command's words built at once (~190 on intake's path), where
	// Script.EvalSha would copy keys and argv into a slice of its own.
	nKeys := len(keys) + len(qKeys) + len(lKeys)
	words := make([]any, 0, 3+nKeys+len(argv)+len(qArgs)+len(lArgs)+4)
	words = append(words, "evalsha", createAndQueue.Hash(), nKeys)
	words = append(words, keyWords...)
	for _, k := range qKeys {
		words = append(words, k)
	}
	for _, k := range lKeys {
		words = append(words, k)
	}
	words = append(words, argv...)
	words = append(words, qArgs...)
	words = append(words, lArgs...)
	words = append(words, postAt, homeAt, limitsKind, confirmed)
	c := redis.NewCmd(ctx, words...)
	s.roundTrips.do(ctx, s.rdb, c)
	if redis.HasErrorPrefix(c.Err(), "NOSCRIPT") {
		// Not run, so nothing was written: run it now (Run loads it).
		c = createAndQueue.Run(ctx, s.rdb, slices.Concat(keys, qKeys, lKeys), words[3+nKeys:]...)
	}
	answer, err := c.Slice()
	if err == nil && admit != nil {
		// {the create's answer, the limits' answer}
		if len(answer) == 2 {
			limits, _ = answer[1].([]any)
			answer, _ = answer[0].([]any)
		} else {
			answer = nil
		}
	}
	if err == nil && len(answer) == 0 {
		err = errors.New("store: no answer from the create script")
	}
	if err != nil {
		return "", 0, limits, err
	}
	res := make([]string, len(answer))
	for i, v := range answer {
		res[i], _ = v.(string)
	}
	if len(res) == 2 && res[0] == "error" {
		// A command failed (the script caught it to answer the limits too).
		return "", 0, limits, fmt.Errorf("store: the create script: %s", res[1])
	}
	if len(res) == 5 {
		var queued []int64
		for _, v := range res[2:] {
			n, _ := strconv.ParseInt(v, 10, 64)
			queued = append(queued, n)
		}
		turnIn = queuedPost(queued)
		res = res[:2]
	}
	cursor, err = s.applied(res, w)
	return cursor, turnIn, limits, err
}

// How many keys and arguments createAndQueue reads as takePostTurn's
// (queuePostArgs), and as the limits' of each kind ("1" admitIntake's, "2"
// reserveOpen's): written into its text, not passed with every create.
var (
	turnWords   = [2]int{2, 9}
	limitsWords = map[string][2]int{"1": {3, 9}, "2": {2, 4}}
)

// createAndQueue is applyWrite with takePostTurn (as queuePostArgs asks
// it) run once the write's guards passed, before it writes: a create and
// its post's queuing in one atomic step, on one Redis node only (the
// channel's queue is another slot). A post told to come back later (posts
// are ahead of it) has its job, and the request's Home tabs job, written
// due then in the write's own ZADD: written once, not written due at the
// arrival and then moved (two skiplist updates in a set as large as the
// shard's jobs, issue #17). Queued before the write's commands run, the
// post stays queued should one of them fail (a script is not rolled back):
// the posts behind it wait for it until the time it was told and a grace,
// as for a create whose process died before its post ran.
//
// Given the agent's limits (an Admission: admitIntake's or reserveOpen's
// keys and arguments), it applies them first, and the create is admitted
// only if they reserved it a slot, or found it holding one (applyWrite's
// notAdmitted). The slot's member is written once: confirmed once the
// create wrote (the request exists and is open from then on), or, a guard
// having stopped it or a command failed, as the reservation the limits
// made (hold), for the caller to settle (a failed command's error is
// answered as {"error", its message}, with the limits' answer, which the
// caller needs to settle). Two scripts in one pipeline, the limits' and
// the create's, needed the reservation written, checked by the create
// (ZSCORE) and confirmed (ZADD XX): three calls of a set as large as the
// agent's open requests, and a script's round of its own (issue #17).
//
//	KEYS -> applyWrite's, then takePostTurn's, then the limits'
//	ARGV -> applyWrite's, then takePostTurn's, then the limits' (as many as
//	        turnWords and limitsWords say), then: the index in ARGV of the
//	        post job's due time in the write's jobs (cmdCreate's), and of
//	        the Home tabs job's (0: none), which are made due
//	        homeAfterCreate after the post's turn; the limits: "0" none,
//	        "1" admitIntake's, "2" reserveOpen's alone; the slot's
//	        confirmed score (confirmedScore)
//
// Returns applyWrite's answer; when it wrote ("ok") and the queuing did
// not fail, followed by takePostTurn's three numbers, as strings. Given
// limits, returns {that answer, the limits' answer}.
var createAndQueue = redis.NewScript(`
local t0 = #ARGV - 4
local nk, na = ` + strconv.Itoa(turnWords[0]) + `, ` + strconv.Itoa(turnWords[1]) + `
local postAt, homeAt, homeAfter = ARGV[t0 + 1] + 0, ARGV[t0 + 2] + 0, ` + strconv.FormatInt(homeAfterCreate.Milliseconds(), 10) + `
local limits = ARGV[t0 + 3]
local nlk, nla = 0, 0
if limits == '1' then
  nlk, nla = ` + strconv.Itoa(limitsWords["1"][0]) + `, ` + strconv.Itoa(limitsWords["1"][1]) + `
elseif limits == '2' then
  nlk, nla = ` + strconv.Itoa(limitsWords["2"][0]) + `, ` + strconv.Itoa(limitsWords["2"][1]) + `
end
local argc = t0 - na - nla
local function turn(KEYS, ARGV)
` + takePostTurnSrc + `
end
local limited, notAdmitted, slotKey, slotID, held
if limits ~= '0' then
  local lk, la = {}, {}
  for j = #KEYS - nlk + 1, #KEYS do lk[#lk + 1] = KEYS[j] end
  for j = argc + na + 1, argc + na + nla do la[#la + 1] = ARGV[j] end
  -- The reservation, written only should a guard stop the create.
  local function hold(key, score, id) held = {key, score, id} end
  local code
  if limits == '1' then
    limited = (function(KEYS, ARGV)
` + admitIntakeSrc + `
    end)(lk, la)
    code = limited[1] == 1 and limited[4]
    slotKey, slotID = lk[2], la[9]
  else
    limited = (function(KEYS, ARGV)
` + reserveOpenSrc + `
    end)(lk, la)
    code = limited[1]
    slotKey, slotID = lk[1], la[4]
  end
  notAdmitted = code ~= 1 and code ~= 2
end
local queued
local function beforeCommands()
  local tk, ta = {}, {}
  for j = #KEYS - nlk - nk + 1, #KEYS - nlk do tk[#tk + 1] = KEYS[j] end
  for j = argc + 1, argc + na do ta[#ta + 1] = ARGV[j] end
  -- The write goes on whatever the queuing does (a script is not rolled
  -- back): should it fail, the post job queues itself when it runs.
  local ok, q = pcall(turn, tk, ta)
  if not ok then return end
  queued = q
  if q[1] == 0 and postAt > 0 then
    local due = ta[1] + q[2]
    ARGV[postAt] = string.format('%d', due)
    if homeAt > 0 then ARGV[homeAt] = string.format('%d', due + homeAfter) end
  end
end
local function write()
` + applyWriteSrc + `
end
-- The write's answer, with the queuing's three numbers when it wrote.
local function answered(res)
  if res[1] == 'ok' and queued then
    return {res[1], res[2], string.format('%d', queued[1]), string.format('%d', queued[2]), string.format('%d', queued[3])}
  end
  return res
end
if not limited then return answered(write()) end
local ok, res = pcall(write)
if ok and res[1] == 'ok' then
  redis.call('ZADD', slotKey, ARGV[t0 + 4], slotID)
elseif held then
  redis.call('ZADD', held[1], held[2], held[3])
end
if not ok then
  if type(res) == 'table' then res = res.err end
  res = {'error', tostring(res)}
end
return {answered(res), limited}
`)

// jobDueAt is the index in applyWrite's ARGV (Lua's, from 1) of the due
// time of job among the jobs of the write's cmdCreate in the set jobsKey,
// 0 when it has none: createAndQueue gives it the post's turn there.
func jobDueAt(argv []any, jobsKey, job string) int {
	for i := applyCommandsAt; i+1 < len(argv); {
		n, _ := argv[i].(int)
		if n < 1 {
			return 0
		}
		if cmd, _ := argv[i+1].(string); cmd == cmdCreate && argv[i+1+createJobsKey] == jobsKey {
			// The jobs' score and member pairs follow their count.
			words, _ := argv[i+1+createJobWords].(int)
			for m := i + 2 + createJobWords + 1; m < i+2+createJobWords+words; m += 2 {
				if argv[m] == job {
					return m // the score's, 0-based m-1, in Lua m
				}
			}
		}
		i += n + 1
	}
	return 0
}

type oneNodeKey struct{}

// oneNodeOnly marks ctx as carrying calls whose KEYS span hash slots, which
// the store makes on one Redis node only, never on a Cluster (whose tests
// check every other call's KEYS share a slot).
func oneNodeOnly(ctx context.Context) context.Context {
	return context.WithValue(ctx, oneNodeKey{}, true)
}

// deferPost makes a new request's post job due when its turn should come,
// but only while it is still due at its arrival, as its create scheduled
// it: a job that ran meanwhile (claimed, or told when to come back) or was
// handed the turn (PullPostJob, which always moves it) is due at another
// time, or not due at all, and is left alone.
//
//	KEYS[1] -> <p>:{sNN}:jobs:due
//	ARGV[1] -> the job's id (post:<request id>)
//	ARGV[2] -> its due time as the create wrote it: the arrival, Unix ms
//	           with its microseconds
//	ARGV[3] -> when its turn should come, Unix ms
//	ARGV[4..6] -> the request's Home tabs job ("": none), its due time as
//	           the create wrote it, and how long after the turn it is due
//	           instead: moved with the post, as createAndQueue moves it
//
// Returns 1 when the job was moved.
var deferPost = redis.NewScript(`
local due = redis.call('ZSCORE', KEYS[1], ARGV[1])
if not due or tonumber(due) ~= tonumber(ARGV[2]) then return 0 end
redis.call('ZADD', KEYS[1], 'XX', ARGV[3], ARGV[1])
if ARGV[4] ~= '' then
  local home = redis.call('ZSCORE', KEYS[1], ARGV[4])
  if home and tonumber(home) == tonumber(ARGV[5]) then
    redis.call('ZADD', KEYS[1], 'XX', tonumber(ARGV[3]) + tonumber(ARGV[6]), ARGV[4])
  end
end
return 1
`)

// postDeferral is a post job to defer to its turn: the request's id, its
// arrival (queueCreate's score for it), when its turn should come.
type postDeferral struct {
	id          string
	arrival, at time.Time
}

// deferPostJob runs deferPost for the post of request id, which arrived
// at arrival and whose turn should come at, off the create's path: with
// others, in one pipeline. Lost, the post job runs at its arrival and is
// told then when its turn comes; late, it finds the job claimed or handed
// the turn and does nothing.
func (s *Store) deferPostJob(id string, arrival, at time.Time) {
	s.deferrals.add(postDeferral{id: id, arrival: arrival, at: at}, s.deferBatch)
}

func (s *Store) deferBatch(ctx context.Context, batch []postDeferral) (failed int) {
	for range 2 {
		pipe := s.rdb.Pipeline()
		for _, d := range batch {
			keys, args := s.deferPostArgs(d)
			deferPost.EvalSha(ctx, pipe, keys, args...)
		}
		cmds, err := pipe.Exec(ctx)
		failed = countFailed(cmds)
		if !redis.HasErrorPrefix(err, "NOSCRIPT") {
			return failed
		}
		// The script is not loaded yet (or Redis forgot it): load it and
		// send the batch again (a deferral that applied does nothing twice).
		if deferPost.Load(ctx, s.rdb).Err() != nil {
			return failed
		}
	}
	return failed
}

// deferPostArgs are deferPost's KEYS and ARGV for d.
func (s *Store) deferPostArgs(d postDeferral) ([]string, []any) {
	args := []any{jobID(JobPost, d.id), postArrivalScore(d.arrival), d.at.UnixMilli()}
	return []string{s.keys.jobs(shardOf(d.id)).due}, append(args, s.homeDeferralArgs(d.id, d.arrival)...)
}

// homeDeferralArgs tell a post's deferral on a Cluster (deferPost's
// ARGV[4..6]) to move the request's Home tabs job with it: the
// job's id ("" without HomeJobs), its due time as queueCreate wrote it for
// a request that arrived at arrival, and homeAfterCreate.
func (s *Store) homeDeferralArgs(id string, arrival time.Time) []any {
	if !s.homeJobs {
		return []any{"", 0, 0}
	}
	return []any{jobID(JobHome, id), homeDueAfterCreate(arrival), homeAfterCreate.Milliseconds()}
}

// homeDueAfterCreate is a new request's Home tabs job's first due time.
func homeDueAfterCreate(arrival time.Time) int64 {
	return arrival.UnixMilli() + homeAfterCreate.Milliseconds()
}

// postArrivalScore is a new request's post job's first due time: its
// arrival to the microsecond, which orders its channel's queue (pace.go).
func postArrivalScore(arrival time.Time) float64 { return float64(arrival.UnixMicro()) / 1000 }

// queueTTL is the least time a channel's queue outlives its last queuing
// (takePostTurn keeps it as long as its posts need).
const queueTTL = time.Hour

// queuePostArgs queue a new request's post in its channel's FIFO, by
// arrival, with its create (applyQueued): takePostTurn asking only. A post
// is in the queue from its request's 202, so a later request's post,
// whichever worker or process claims it first, finds it ahead
// (takePostTurn's own ZADD NX is then a no-op). The answer tells the create
// when the post's turn should come (queuedPost).
//
// (On one Redis node the create's script gives the post's job the time
// the answer tells, as it writes it: createAndQueue. On a Cluster the
// create defers the job, off its path: deferPostJob.)
func (s *Store) queuePostArgs(t PostTurn) ([]string, []any) {
	p, mode := s.postPacing.Load(), "1"
	if p == nil {
		p, mode = &Pacing{}, "2"
	}
	args := []any{s.nowMs(), max(p.Interval.Milliseconds(), 1), t.ID, arrivalMs(t.Arrival),
		p.Settle.Milliseconds(), p.Grace.Milliseconds(), p.Lead.Milliseconds(), mode, queueTTL.Milliseconds()}
	return s.paceKeys(t.Channel), args
}

// PacePosts tells the store how this process's poster paces each channel's
// posts (the pacing it gives TakePostTurn), once, as the service is wired.
// Create then asks, as it queues a request's post, when the post's turn
// should come: a post with posts ahead of it in its channel has its job
// made due then, as its first run would have been told, instead of running
// at its arrival only to be told (issue #17: under load that was one more
// run of the job runner per request). Without it, Create queues the post
// and its job runs at its arrival.
func (s *Store) PacePosts(p Pacing) { s.postPacing.Store(&p) }

// queuedPost reads takePostTurn's answer to queuePostArgs: how long from
// now the post's turn should come when posts are ahead of it (0: it may go
// as soon as its job runs).
func queuedPost(res []int64) (wait time.Duration) {
	if len(res) == 3 && res[0] == 0 {
		wait = time.Duration(res[1]) * time.Millisecond
	}
	return wait
}

// queuePostAfter queues the post of a request already stored in its
// channel's FIFO, in a round trip of its own: for the create that matched
// standing approvals, whose WATCH transaction cannot carry it (applyQueued
// queues every other create's post with its script).
func (s *Store) queuePostAfter(ctx context.Context, t PostTurn) error {
	keys, args := s.queuePostArgs(t)
	if err := takePostTurn.Run(ctx, s.rdb, keys, args...).Err(); err != nil {
		return fmt.Errorf("store: queue the post of %s in %s: %w", t.ID, t.Channel, err)
	}
	return nil
}

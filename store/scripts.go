package store

import (
	"strconv"

	"github.com/redis/go-redis/v9"
)

// Every Lua script approvalbot runs. Each one receives all of its keys through
// KEYS (never building a key name inside Lua) and all keys of one call share a
// {hash tag}, so each script is valid on Redis Cluster.
//
// On a create's path a number is read from a string as s + 0, not
// tonumber(s): Lua 5.1's tonumber parses the string twice (strtod, ~500
// instructions each), and a create read some forty (issue #17).

// claimJobs leases up to ARGV[3] due jobs of one shard to the calling worker.
// Jobs whose lease expired (their worker died) are first put back as due. A
// job that is still leased by a live worker is left due, so one job id never
// runs twice at once.
//
//	KEYS[1] -> <p>:{sNN}:jobs:due
//	KEYS[2] -> <p>:{sNN}:jobs:inflight
//	KEYS[3] -> <p>:{sNN}:jobs:lease
//	KEYS[4] -> <p>:{sNN}:jobs:attempts
//	ARGV[1] -> now, Unix ms
//	ARGV[2] -> lease length, ms
//	ARGV[3] -> most jobs to claim
//	ARGV[4] -> lease token of this claim
//
// Returns a flat list {job id, attempt, due ms, job id, ..., next}; attempt
// counts from 1, and reclaims count as attempts; due is when the job was
// due; next, the last element, is the earliest due time after now of the
// jobs left (ms), or -1 when none is, so the runner can sleep until then.
// The list's length is 3 per job plus one.
var claimJobs = redis.NewScript(`
local now = tonumber(ARGV[1])
local expired = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', ARGV[1], 'LIMIT', '0', ARGV[3])
for _, id in ipairs(expired) do
  redis.call('ZREM', KEYS[2], id)
  redis.call('HDEL', KEYS[3], id)
  local due = redis.call('ZSCORE', KEYS[1], id)
  if not due or tonumber(due) > now then redis.call('ZADD', KEYS[1], ARGV[1], id) end
end
-- Walk the due jobs in due order. A job still leased by a live worker stays
-- due and is stepped over (skipped counts them: claimed ones leave the set),
-- so it never hides the claimable jobs behind it. (Numbers go to Redis as
-- strings made here where it is cheap: redis.call writes a Lua number with
-- %.17g, several times the cost.)
local want, skipped, claimed, out = tonumber(ARGV[3]), 0, 0, {}
local leased = string.format('%d', now + tonumber(ARGV[2]))
while claimed < want and skipped < 1000 do
  local ids = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now, 'WITHSCORES', 'LIMIT', skipped, want - claimed)
  if #ids == 0 then break end
  for i = 1, #ids, 2 do
    local id, due = ids[i], ids[i + 1]
    if redis.call('ZSCORE', KEYS[2], id) then
      skipped = skipped + 1
    else
      redis.call('ZREM', KEYS[1], id)
      redis.call('ZADD', KEYS[2], leased, id)
      redis.call('HSET', KEYS[3], id, ARGV[4])
      claimed = claimed + 1
      out[#out + 1] = id
      out[#out + 1] = redis.call('HINCRBY', KEYS[4], id, 1)
      out[#out + 1] = due
    end
  end
end
local next = redis.call('ZRANGEBYSCORE', KEYS[1], '(' .. ARGV[1], '+inf', 'WITHSCORES', 'LIMIT', 0, 1)
out[#out + 1] = next[2] or '-1'
return out
`)

// ackJob completes a claimed job, but only while the caller's lease is the
// current one (the lease token fences a worker whose lease was reclaimed).
//
//	KEYS[1] -> <p>:{sNN}:jobs:inflight
//	KEYS[2] -> <p>:{sNN}:jobs:lease
//	KEYS[3] -> <p>:{sNN}:jobs:attempts
//	ARGV[1] -> job id
//	ARGV[2] -> lease token
//
// Returns 1 on success, 0 when the lease was lost.
var ackJob = redis.NewScript(`
if redis.call('HGET', KEYS[2], ARGV[1]) ~= ARGV[2] then return 0 end
redis.call('ZREM', KEYS[1], ARGV[1])
redis.call('HDEL', KEYS[2], ARGV[1])
redis.call('HDEL', KEYS[3], ARGV[1])
return 1
`)

// ackJobNext is ackJob that also tells when the shard's earliest job is
// due, for a runner deciding whether to look at the shard again (AckNext).
//
//	KEYS[1..3], ARGV -> as ackJob's
//	KEYS[4] -> <p>:{sNN}:jobs:due
//
// Returns {1, the earliest due score or "-1" when none is due}, or {0, "-1"}
// when the lease was lost.
var ackJobNext = redis.NewScript(`
if redis.call('HGET', KEYS[2], ARGV[1]) ~= ARGV[2] then return {0, '-1'} end
redis.call('ZREM', KEYS[1], ARGV[1])
redis.call('HDEL', KEYS[2], ARGV[1])
redis.call('HDEL', KEYS[3], ARGV[1])
return {1, redis.call('ZRANGE', KEYS[4], '0', '0', 'WITHSCORES')[2] or '-1'}
`)

// retryJob releases a claimed job to run again at ARGV[3] (or earlier, if the
// job was meanwhile scheduled sooner), fenced by the lease token like ackJob.
//
//	KEYS[1] -> <p>:{sNN}:jobs:due
//	KEYS[2] -> <p>:{sNN}:jobs:inflight
//	KEYS[3] -> <p>:{sNN}:jobs:lease
//	KEYS[4] -> <p>:{sNN}:jobs:attempts
//	ARGV[1] -> job id
//	ARGV[2] -> lease token
//	ARGV[3] -> next due time, Unix ms
//	ARGV[4] -> "1" when this run must not count as an attempt (pacing, rate limits)
//
// Returns 1 on success, 0 when the lease was lost.
var retryJob = redis.NewScript(`
if redis.call('HGET', KEYS[3], ARGV[1]) ~= ARGV[2] then return 0 end
redis.call('ZREM', KEYS[2], ARGV[1])
redis.call('HDEL', KEYS[3], ARGV[1])
local due = redis.call('ZSCORE', KEYS[1], ARGV[1])
if not due or tonumber(due) > tonumber(ARGV[3]) then redis.call('ZADD', KEYS[1], ARGV[3], ARGV[1]) end
if ARGV[4] == '1' then redis.call('HINCRBY', KEYS[4], ARGV[1], -1) end
return 1
`)

// buryJob moves a claimed job to the shard's dead-letter list, fenced by the
// lease token, and caps the list.
//
//	KEYS[1] -> <p>:{sNN}:jobs:inflight
//	KEYS[2] -> <p>:{sNN}:jobs:lease
//	KEYS[3] -> <p>:{sNN}:jobs:attempts
//	KEYS[4] -> <p>:{sNN}:jobs:dead
//	ARGV[1] -> job id
//	ARGV[2] -> lease token
//	ARGV[3] -> dead-letter entry (JSON)
//	ARGV[4] -> list cap
//
// Returns 1 on success, 0 when the lease was lost.
var buryJob = redis.NewScript(`
if redis.call('HGET', KEYS[2], ARGV[1]) ~= ARGV[2] then return 0 end
redis.call('ZREM', KEYS[1], ARGV[1])
redis.call('HDEL', KEYS[2], ARGV[1])
redis.call('HDEL', KEYS[3], ARGV[1])
redis.call('LPUSH', KEYS[4], ARGV[3])
redis.call('LTRIM', KEYS[4], 0, tonumber(ARGV[4]) - 1)
return 1
`)

// takeToken takes one token from an agent's intake bucket. The bucket is
// kept in integer units so its refill is exact: one token is ARGV[2] units
// (the period in ms), and ARGV[3] units flow in per ms (the count per
// period), so after e ms a bucket holds min(capacity, level + e*count).
// Time comes from ARGV (the store's clock, so tests use a fake one), never
// from TIME. The stored value decides; the TTL (the time the bucket takes
// to refill completely, after which a missing key means the same thing: a
// full bucket) only cleans up. A clock that went back (another replica's)
// refills nothing and never moves the stored time back.
//
// The bucket is one string, "<level>:<when>", written with its TTL by one
// SET: a hash (level and when as fields) took an HSET and a PEXPIRE, two
// of the ~30 calls of a create, each ~1% of Redis's CPU for it (issue #17).
// Anything else stored there (a value this script did not write) reads as
// a full bucket.
//
//	KEYS[1] -> <p>:bucket:{<agent>}   string: level (units) ":" when (Unix ms)
//	ARGV[1] -> now, Unix ms
//	ARGV[2] -> period, ms (units per token)
//	ARGV[3] -> tokens per period (units per ms)
//	ARGV[4] -> burst, tokens
//
// Returns {1 if taken else 0, whole tokens left, ms until a token}.
var takeToken = redis.NewScript(takeTokenSrc)

const takeTokenSrc = `
local now, per, count, burst = ARGV[1] + 0, ARGV[2] + 0, ARGV[3] + 0, ARGV[4] + 0
local cap = burst * per
local level, t = cap, now
local l, at = string.match(redis.call('GET', KEYS[1]) or '', '^(%d+):(%d+)$')
if l then
  level, t = l + 0, at + 0
  if now > t then
    level = math.min(cap, level + (now - t) * count)
    t = now
  end
  if level > cap then level = cap end
end
local allowed, wait = 0, 0
if level >= per then
  level = level - per
  allowed = 1
else
  wait = math.ceil((per - level) / count)
end
redis.call('SET', KEYS[1], string.format('%d:%d', level, t), 'PX', string.format('%d', math.ceil((cap - level) / count) + 1000))
return {allowed, math.floor(level / per), wait}
`

// setFields updates fields of an existing request, and nothing when the
// request does not exist (so a late job cannot resurrect a half record).
//
//	KEYS[1] -> <p>:{sNN}:req:<id>
//	ARGV    -> field, value pairs
//
// Returns 1 when updated, 0 when the request does not exist.
var setFields = redis.NewScript(`
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
redis.call('HSET', KEYS[1], unpack(ARGV))
return 1
`)

// setFieldsAndJob is setFields that also schedules one of the request's
// jobs, due at ARGV[2] whether it was due earlier or later: both or neither.
//
//	KEYS[1]   -> <p>:{sNN}:req:<id>
//	KEYS[2]   -> <p>:{sNN}:jobs:due
//	ARGV[1]   -> the job's id
//	ARGV[2]   -> when it is due, Unix ms
//	ARGV[3..] -> field, value pairs
//
// Returns 1 when updated, 0 when the request does not exist.
var setFieldsAndJob = redis.NewScript(`
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
redis.call('HSET', KEYS[1], unpack(ARGV, 3))
redis.call('ZADD', KEYS[2], ARGV[2], ARGV[1])
return 1
`)

// reserveOpen takes one of an agent's open-request slots (INTAKE_MAX_OPEN)
// for a request about to be created: the count is the zset's members, and
// the new member is a reservation until ARGV[2], confirmed once the create
// committed (confirmOpen). Time comes from ARGV (the store's clock). A
// request that is a member already (open, or being created by another
// intake) takes no second slot; its reservation, if still one, is extended
// to ARGV[2] so that it outlives this intake's create, and a confirmed
// member becomes a reservation until ARGV[2] (confirmed again once this
// intake's create or look-up settles it): its request may be a closed or
// deleted one whose member outlived it, which a reconcile that read it
// before this create would otherwise remove under the new request, and a
// reconcile leaves a reservation alone until its deadline, then confirms
// it if its request is open. Nothing expires here:
// a reservation past its deadline still counts until reconcile has looked
// at its request (opencap.go), so a create that committed but was never
// confirmed is never dropped from the count.
//
// At the cap, the first refusal in every OpenReconcileEvery returns the
// members, for the caller to reconcile them with their requests' statuses.
// (That period and openConfirmed are written into the script's text, not
// passed: a create passes each of its words at a cost, issue #17.)
//
//	KEYS[1] -> <p>:open:{<agent>}        zset: request id -> reservation deadline ms, or openConfirmed + ms once confirmed
//	KEYS[2] -> <p>:open:{<agent>}:meta   hash: seed = trusted until, ms; check = no reconcile before, ms
//	ARGV[1] -> now, Unix ms
//	ARGV[2] -> the reservation's deadline, Unix ms
//	ARGV[3] -> the cap (1 or more)
//	ARGV[4] -> request id
//
// Returns {code, count}: code 1 reserved (count includes it), 2 already a
// member (nothing taken), 0 refused at the cap, 3 not seeded (nothing done:
// seed, then call again), or 4 refused at the cap with the members to
// reconcile following, as id, score pairs.
//
// The reservation's ZADD is the function hold, which a script embedding
// this one may define otherwise: a create that applies the limits in its
// own script writes the member once, as a reservation or confirmed, when
// it knows whether it commits (createAndQueue).
var reserveOpen = redis.NewScript(holdReservation + reserveOpenSrc)

// holdReservation is the function hold of reserveOpenSrc as run on its own:
// the reservation is written at once.
const holdReservation = "local function hold(key, score, id) redis.call('ZADD', key, score, id) end\n"

var reserveOpenSrc = `
local now, deadline, cap = ARGV[1] + 0, ARGV[2] + 0, ARGV[3] + 0
if (redis.call('HGET', KEYS[2], 'seed') or 0) + 0 <= now then return {3, 0} end
local cur = redis.call('ZSCORE', KEYS[1], ARGV[4])
if cur then
  if cur + 0 < deadline or cur + 0 >= ` + openConfirmedArg + ` then hold(KEYS[1], ARGV[2], ARGV[4]) end
  return {2, redis.call('ZCARD', KEYS[1])}
end
local n = redis.call('ZCARD', KEYS[1])
if n < cap then
  hold(KEYS[1], ARGV[2], ARGV[4])
  return {1, n + 1}
end
if tonumber(redis.call('HGET', KEYS[2], 'check') or '0') > now then return {0, n} end
redis.call('HSET', KEYS[2], 'check', string.format('%d', now + ` + strconv.FormatInt(OpenReconcileEvery.Milliseconds(), 10) + `))
local out = {4, n}
for _, v in ipairs(redis.call('ZRANGE', KEYS[1], 0, -1, 'WITHSCORES')) do out[#out + 1] = v end
return out
`

// settleOpen confirms or removes members of an agent's open-request count,
// each only if its score is still the one the caller saw (so a reservation
// renewed or confirmed meanwhile is left alone).
//
//	KEYS[1] -> <p>:open:{<agent>}
//	ARGV[1] -> the score to confirm a member with (confirmedScore)
//	ARGV[2..] -> triples: request id, the score seen, "c" (confirm) or "r" (remove)
//
// Returns how many members were removed.
var settleOpen = redis.NewScript(`
local removed = 0
for i = 2, #ARGV, 3 do
  local cur = redis.call('ZSCORE', KEYS[1], ARGV[i])
  if cur and tonumber(cur) == tonumber(ARGV[i + 1]) then
    if ARGV[i + 2] == 'c' then
      redis.call('ZADD', KEYS[1], ARGV[1], ARGV[i])
    else
      redis.call('ZREM', KEYS[1], ARGV[i])
      removed = removed + 1
    end
  end
end
return removed
`)

// seedOpen adds an agent's open requests, as its status indexes list them,
// to its count as confirmed members, and trusts the count until ARGV[1].
// Adding is always safe: a request listed is open or was (a closed one is
// removed by reconcile), and one created since holds a member already.
// A member already there keeps its score (NX): it is counted, and a
// reconcile compares scores before removing one (see reserveOpen).
//
//	KEYS[1] -> <p>:open:{<agent>}
//	KEYS[2] -> <p>:open:{<agent>}:meta
//	ARGV[1] -> trusted until, Unix ms
//	ARGV[2] -> the score to confirm a member with (confirmedScore)
//	ARGV[3..] -> request ids
var seedOpen = redis.NewScript(`
for i = 3, #ARGV do redis.call('ZADD', KEYS[1], 'NX', ARGV[2], ARGV[i]) end
redis.call('HSET', KEYS[2], 'seed', ARGV[1])
return 0
`)

// scheduleOnce schedules a periodic job unless it is already due or
// running (ScheduleRetention: every replica calls it at start).
//
//	KEYS[1] -> <p>:{sNN}:jobs:due
//	KEYS[2] -> <p>:{sNN}:jobs:inflight
//	ARGV[1] -> job id
//	ARGV[2] -> due time, Unix ms
//
// Returns 1 when scheduled, 0 when it already was.
var scheduleOnce = redis.NewScript(`
if redis.call('ZSCORE', KEYS[1], ARGV[1]) or redis.call('ZSCORE', KEYS[2], ARGV[1]) then return 0 end
redis.call('ZADD', KEYS[1], ARGV[2], ARGV[1])
return 1
`)

// deleteRetained deletes a closed request past retention (Sweep), checking
// again, atomically, everything the sweep decided on: the request is still
// in the status, of the agent and channel its keys were built from; it
// closed (resolved_ms, else withdrawn_ms, else its last update) before the
// cutoff; the export mark covers its newest audit entry (audit_gseq); no
// job of it is due or running. It deletes the request, its audit chain,
// delivery log and copies, and removes it from every index.
//
//	KEYS[1]  -> <p>:{sNN}:req:<id>
//	KEYS[2]  -> <p>:{sNN}:audit:<id>
//	KEYS[3]  -> <p>:{sNN}:deliveries:<id>
//	KEYS[4]  -> <p>:{sNN}:copies:<id>
//	KEYS[5]  -> <p>:{sNN}:idx:status:<status>
//	KEYS[6]  -> <p>:{sNN}:idx:agent:<agent>:all
//	KEYS[7]  -> <p>:{sNN}:idx:agent:<agent>:<status>
//	KEYS[8]  -> <p>:{sNN}:audit-exported
//	KEYS[9]  -> <p>:{sNN}:jobs:due
//	KEYS[10] -> <p>:{sNN}:jobs:inflight
//	KEYS[11] -> <p>:{sNN}:idx:open
//	KEYS[12] -> <p>:{sNN}:idx:deadline
//	KEYS[13] -> <p>:{sNN}:idx:channel:<channel>
//	KEYS[14] -> <p>:{sNN}:doc:<id>
//	ARGV[1]  -> request id
//	ARGV[2]  -> status (closed)
//	ARGV[3]  -> agent
//	ARGV[4]  -> channel
//	ARGV[5]  -> cutoff, Unix ms: it must have closed before
//	ARGV[6…] -> ids of the request's jobs that keep it while due or running
//
// Returns 1 when deleted, 2 when kept because its audit is not exported yet,
// 0 when kept for any other reason (gone, changed, too young, a job).
var deleteRetained = redis.NewScript(`
local h = redis.call('HMGET', KEYS[1], 'status', 'agent', 'channel', 'resolved_ms', 'withdrawn_ms', 'updated_ms', 'audit_gseq')
if h[1] ~= ARGV[2] or h[2] ~= ARGV[3] or (h[3] or '') ~= ARGV[4] then return 0 end
local closed = tonumber(h[4]) or tonumber(h[5]) or tonumber(h[6])
if not closed or closed >= tonumber(ARGV[5]) then return 0 end
for i = 6, #ARGV do
  if redis.call('ZSCORE', KEYS[9], ARGV[i]) or redis.call('ZSCORE', KEYS[10], ARGV[i]) then return 0 end
end
local gseq = tonumber(h[7])
local mark = tonumber(redis.call('GET', KEYS[8]) or '0') or 0
if not gseq or gseq > mark then return 2 end
redis.call('DEL', KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[14])
for i = 5, 7 do redis.call('ZREM', KEYS[i], ARGV[1]) end
for i = 11, 13 do redis.call('ZREM', KEYS[i], ARGV[1]) end
return 1
`)

// trimChain removes the first ARGV[2] entries of a shard's global chain
// and records the last of them as the chain's base, if the chain's front
// is still the one the sweep read: the base is unchanged and the last
// entry to remove is the one it decided on.
//
//	KEYS[1] -> <p>:{sNN}:audit
//	KEYS[2] -> <p>:{sNN}:audit-base
//	ARGV[1] -> the base as read ("" when none)
//	ARGV[2] -> how many entries to remove
//	ARGV[3] -> the last entry to remove, as stored
//	ARGV[4] -> the new base, "<seq>:<hash>" of that entry
//
// Returns 1 when trimmed, 0 when the chain changed.
var trimChain = redis.NewScript(`
if (redis.call('GET', KEYS[2]) or '') ~= ARGV[1] then return 0 end
local n = tonumber(ARGV[2])
if redis.call('LINDEX', KEYS[1], n - 1) ~= ARGV[3] then return 0 end
redis.call('LTRIM', KEYS[1], n, -1)
redis.call('SET', KEYS[2], ARGV[4])
return 1
`)

// advanceMark moves a shard's export mark to the end of an exported run
// of its global chain, if the run starts at or before the entry after the
// mark (so no entry is skipped) and ends past it.
//
//	KEYS[1] -> <p>:{sNN}:audit-exported
//	ARGV[1] -> the run's first global seq
//	ARGV[2] -> its last
//
// Returns 1 when the mark advanced, 0 otherwise.
var advanceMark = redis.NewScript(`
local mark = tonumber(redis.call('GET', KEYS[1]) or '0') or 0
if tonumber(ARGV[1]) > mark + 1 or tonumber(ARGV[2]) <= mark then return 0 end
redis.call('SET', KEYS[1], ARGV[2])
return 1
`)

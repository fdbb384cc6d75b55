package store

import "github.com/redis/go-redis/v9"

// Every Lua script approvalbot runs. Each one receives all of its keys through
// KEYS (never building a key name inside Lua) and all keys of one call share a
// {hash tag}, so each script is valid on Redis Cluster.

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
// Returns a flat list {job id, attempt, due ms, job id, ...}; attempt counts
// from 1, and reclaims count as attempts; due is when the job was due.
var claimJobs = redis.NewScript(`
local now = tonumber(ARGV[1])
local expired = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', now, 'LIMIT', 0, ARGV[3])
for _, id in ipairs(expired) do
  redis.call('ZREM', KEYS[2], id)
  redis.call('HDEL', KEYS[3], id)
  local due = redis.call('ZSCORE', KEYS[1], id)
  if not due or tonumber(due) > now then redis.call('ZADD', KEYS[1], now, id) end
end
-- Walk the due jobs in due order. A job still leased by a live worker stays
-- due and is stepped over (skipped counts them: claimed ones leave the set),
-- so it never hides the claimable jobs behind it.
local want, skipped, claimed, out = tonumber(ARGV[3]), 0, 0, {}
while claimed < want and skipped < 1000 do
  local ids = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now, 'WITHSCORES', 'LIMIT', skipped, want - claimed)
  if #ids == 0 then break end
  for i = 1, #ids, 2 do
    local id, due = ids[i], ids[i + 1]
    if redis.call('ZSCORE', KEYS[2], id) then
      skipped = skipped + 1
    else
      redis.call('ZREM', KEYS[1], id)
      redis.call('ZADD', KEYS[2], now + tonumber(ARGV[2]), id)
      redis.call('HSET', KEYS[3], id, ARGV[4])
      claimed = claimed + 1
      out[#out + 1] = id
      out[#out + 1] = redis.call('HINCRBY', KEYS[4], id, 1)
      out[#out + 1] = due
    end
  end
end
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

// takePaceSlot reserves the right to post to a channel now. While the key
// exists nobody may post; its TTL says how long to wait.
//
//	KEYS[1] -> <p>:pace:<channel>
//	ARGV[1] -> pacing interval, ms
//
// Returns 0 when the slot was taken, otherwise the ms to wait.
var takePaceSlot = redis.NewScript(`
local ttl = redis.call('PTTL', KEYS[1])
if ttl > 0 then return ttl end
redis.call('SET', KEYS[1], '1', 'PX', ARGV[1])
return 0
`)

// holdPace blocks a channel for at least ARGV[1] ms (after a 429), never
// shortening an existing hold.
//
//	KEYS[1] -> <p>:pace:<channel>
//	ARGV[1] -> hold, ms
var holdPace = redis.NewScript(`
if redis.call('PTTL', KEYS[1]) < tonumber(ARGV[1]) then
  redis.call('SET', KEYS[1], '1', 'PX', ARGV[1])
end
return 0
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
//	KEYS[1] -> <p>:rate:{<agent>}     hash: l = level (units), t = when, Unix ms
//	ARGV[1] -> now, Unix ms
//	ARGV[2] -> period, ms (units per token)
//	ARGV[3] -> tokens per period (units per ms)
//	ARGV[4] -> burst, tokens
//
// Returns {1 if taken else 0, whole tokens left, ms until a token}.
var takeToken = redis.NewScript(`
local now, per, count, burst = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
local cap = burst * per
local st = redis.call('HMGET', KEYS[1], 'l', 't')
local level, t = cap, now
if st[1] and st[2] then
  level, t = tonumber(st[1]), tonumber(st[2])
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
redis.call('HSET', KEYS[1], 'l', string.format('%d', level), 't', string.format('%d', t))
redis.call('PEXPIRE', KEYS[1], math.ceil((cap - level) / count) + 1000)
return {allowed, math.floor(level / per), wait}
`)

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

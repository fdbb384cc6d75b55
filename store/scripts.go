package store

import "github.com/redis/go-redis/v9"

// Every Lua script approvalbot runs. Each one receives all of its keys through
// KEYS (never building a key name inside Lua) and all keys of one call share a
// {hash tag}, so each script is valid on Redis Cluster.

// createRequest stores a new request and schedules its Slack post in one step,
// so a crash after the intake's 202 can never lose the post (the outbox).
//
//	KEYS[1] -> <p>:{sNN}:req:<id>
//	KEYS[2] -> <p>:{sNN}:jobs:due
//	KEYS[3] -> <p>:{sNN}:idx:status:pending
//	KEYS[4] -> <p>:{sNN}:idx:agent:<agent>:all
//	KEYS[5] -> <p>:{sNN}:idx:agent:<agent>:pending
//	ARGV[1] -> body hash (sha256 of the canonical document)
//	ARGV[2] -> agent identity
//	ARGV[3] -> now, Unix ms (the job's due time and the index score)
//	ARGV[4] -> post job id
//	ARGV[5] -> request id
//	ARGV[6..] -> field, value pairs of the new request hash
//
// Returns 0 when created, 1 when the same agent already stored an identical
// body (idempotent replay), 2 when the id is taken by a different body or agent.
var createRequest = redis.NewScript(`
if redis.call('EXISTS', KEYS[1]) == 1 then
  local h = redis.call('HMGET', KEYS[1], 'hash', 'agent')
  if h[1] == ARGV[1] and h[2] == ARGV[2] then return 1 end
  return 2
end
redis.call('HSET', KEYS[1], unpack(ARGV, 6))
redis.call('ZADD', KEYS[2], ARGV[3], ARGV[4])
redis.call('ZADD', KEYS[3], ARGV[3], ARGV[5])
redis.call('ZADD', KEYS[4], ARGV[3], ARGV[5])
redis.call('ZADD', KEYS[5], ARGV[3], ARGV[5])
return 0
`)

// transition moves an open request to a new status (compare-and-set on the
// status the caller read), moves it between indexes, bumps its version, and
// schedules the jobs that must follow: a message sync when the request is
// already posted, or cancels the pending post when it is not.
//
//	KEYS[1] -> <p>:{sNN}:req:<id>
//	KEYS[2] -> <p>:{sNN}:idx:status:<from>
//	KEYS[3] -> <p>:{sNN}:idx:status:<to>
//	KEYS[4] -> <p>:{sNN}:idx:agent:<agent>:<from>
//	KEYS[5] -> <p>:{sNN}:idx:agent:<agent>:<to>
//	KEYS[6] -> <p>:{sNN}:jobs:due
//	KEYS[7] -> <p>:{sNN}:jobs:attempts
//	ARGV[1] -> expected current status (<from>)
//	ARGV[2] -> new status (<to>)
//	ARGV[3] -> now, Unix ms
//	ARGV[4] -> request id
//	ARGV[5] -> post job id (cancelled when the message was never posted)
//	ARGV[6] -> sync job id (scheduled when the message exists)
//	ARGV[7] -> field name to record the transition time under (e.g. withdrawn_at)
//
// Returns {'ok', version}, {'moved', current status} when the status is no
// longer <from>, or {'missing'}.
var transition = redis.NewScript(`
local cur = redis.call('HGET', KEYS[1], 'status')
if not cur then return {'missing'} end
if cur ~= ARGV[1] then return {'moved', cur} end
local score = redis.call('HGET', KEYS[1], 'received_ms')
redis.call('HSET', KEYS[1], 'status', ARGV[2], 'updated_ms', ARGV[3], ARGV[7], ARGV[3])
local v = redis.call('HINCRBY', KEYS[1], 'version', 1)
redis.call('ZREM', KEYS[2], ARGV[4])
redis.call('ZADD', KEYS[3], score, ARGV[4])
redis.call('ZREM', KEYS[4], ARGV[4])
redis.call('ZADD', KEYS[5], score, ARGV[4])
if redis.call('HEXISTS', KEYS[1], 'slack_ts') == 1 then
  redis.call('ZADD', KEYS[6], ARGV[3], ARGV[6])
else
  redis.call('ZREM', KEYS[6], ARGV[5])
  redis.call('HDEL', KEYS[7], ARGV[5])
end
return {'ok', tostring(v)}
`)

// markPosted records where a request's message was posted. When the request
// changed after the worker rendered it (its version moved on), a sync job is
// scheduled so the message catches up.
//
//	KEYS[1] -> <p>:{sNN}:req:<id>
//	KEYS[2] -> <p>:{sNN}:jobs:due
//	ARGV[1] -> channel id
//	ARGV[2] -> message ts
//	ARGV[3] -> now, Unix ms
//	ARGV[4] -> version the posted message rendered
//	ARGV[5] -> sync job id
//
// Returns 1 when a sync was scheduled, 0 otherwise, -1 when the request is gone.
var markPosted = redis.NewScript(`
if redis.call('EXISTS', KEYS[1]) == 0 then return -1 end
redis.call('HSET', KEYS[1], 'slack_channel', ARGV[1], 'slack_ts', ARGV[2], 'posted_ms', ARGV[3],
  'rendered_version', ARGV[4])
redis.call('HDEL', KEYS[1], 'post_error', 'post_error_permanent')
if redis.call('HGET', KEYS[1], 'version') ~= ARGV[4] then
  redis.call('ZADD', KEYS[2], ARGV[3], ARGV[5])
  return 1
end
return 0
`)

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
// Returns a flat list {job id, attempt, job id, attempt, ...}; attempt counts
// from 1, and reclaims count as attempts.
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
  local ids = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now, 'LIMIT', skipped, want - claimed)
  if #ids == 0 then break end
  for _, id in ipairs(ids) do
    if redis.call('ZSCORE', KEYS[2], id) then
      skipped = skipped + 1
    else
      redis.call('ZREM', KEYS[1], id)
      redis.call('ZADD', KEYS[2], now + tonumber(ARGV[2]), id)
      redis.call('HSET', KEYS[3], id, ARGV[4])
      claimed = claimed + 1
      out[#out + 1] = id
      out[#out + 1] = redis.call('HINCRBY', KEYS[4], id, 1)
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

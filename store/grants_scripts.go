package store

import "github.com/redis/go-redis/v9"

// The Lua scripts of standing approvals (grants.go), with the same rules as
// scripts.go: every key through KEYS, all keys of one call in one slot.

// redisNowMs is Lua that sets now to Redis's TIME in Unix ms: a grant's
// expiry is Redis's, never a replica's clock (grants.go).
const redisNowMs = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
`

// expireIndexWithLast gives a zset of expiries (KEYS[i]) the TTL of its
// latest member after dropping those past now, so it goes when they all
// have; an empty one is gone already.
const expireIndexWithLast = `
local function expireWithLast(key, now)
  redis.call('ZREMRANGEBYSCORE', key, '-inf', now)
  local last = redis.call('ZRANGE', key, -1, -1, 'WITHSCORES')
  if last[2] then redis.call('PEXPIREAT', key, last[2]) end
end
`

// createGrant stores a standing approval's record, expiring at Redis's now
// plus its duration, and indexes it (grants.go).
//
//	KEYS[1] -> <p>:{grants}:grant:<id>
//	KEYS[2] -> <p>:{grants}:live
//	KEYS[3] -> <p>:{grants}:agent:<agent>
//	ARGV[1..7] -> id, agent, action key, granter (JSON), duration ms,
//	              request it was granted from, comment
//
// Returns {granted ms, expires ms}.
var createGrant = redis.NewScript(redisNowMs + expireIndexWithLast + `
local exp = now + tonumber(ARGV[5])
redis.call('HSET', KEYS[1], 'id', ARGV[1], 'agent', ARGV[2], 'action_key', ARGV[3], 'by', ARGV[4],
  'granted_ms', string.format('%.0f', now), 'expires_ms', string.format('%.0f', exp),
  'from_request', ARGV[6], 'comment', ARGV[7])
redis.call('PEXPIREAT', KEYS[1], string.format('%.0f', exp))
for i = 2, 3 do
  redis.call('ZADD', KEYS[i], string.format('%.0f', exp), ARGV[1])
  expireWithLast(KEYS[i], now)
end
return {now, exp}
`)

// writeGrantCopy writes a grant's copy into one request shard, unless it
// expired or a revocation's tombstone is there already (SET NX), and
// indexes it by the agent.
//
//	KEYS[1] -> <p>:{sNN}:grant:<id>
//	KEYS[2] -> <p>:{sNN}:grants:<agent>
//	ARGV[1] -> grant id
//	ARGV[2] -> the grant, JSON
//	ARGV[3] -> its expiry, Unix ms
//
// Returns 1 when written, 0 otherwise.
var writeGrantCopy = redis.NewScript(redisNowMs + expireIndexWithLast + `
local exp = tonumber(ARGV[3])
if exp <= now then return 0 end
if not redis.call('SET', KEYS[1], ARGV[2], 'NX') then return 0 end
redis.call('PEXPIREAT', KEYS[1], ARGV[3])
redis.call('ZADD', KEYS[2], ARGV[3], ARGV[1])
expireWithLast(KEYS[2], now)
return 1
`)

// revokeGrant marks a grant's record revoked (the first revocation's who
// and when stay) and drops it from the live indexes.
//
//	KEYS[1] -> <p>:{grants}:grant:<id>
//	KEYS[2] -> <p>:{grants}:live
//	KEYS[3] -> <p>:{grants}:agent:<agent>
//	ARGV[1] -> grant id
//	ARGV[2] -> who revokes it (JSON)
//
// Returns nil when there is no such grant (or it expired), else
// {"1" if it was revoked before else "0", field, value, ...}.
var revokeGrant = redis.NewScript(redisNowMs + `
if redis.call('EXISTS', KEYS[1]) == 0 then return false end
local already = '1'
if not redis.call('HGET', KEYS[1], 'revoked_ms') then
  already = '0'
  redis.call('HSET', KEYS[1], 'revoked_ms', string.format('%.0f', now), 'revoked_by', ARGV[2])
end
redis.call('ZREM', KEYS[2], ARGV[1])
redis.call('ZREM', KEYS[3], ARGV[1])
local out = {already}
for _, v in ipairs(redis.call('HGETALL', KEYS[1])) do out[#out + 1] = v end
return out
`)

// tombstoneGrant replaces a revoked grant's copy in one request shard by a
// tombstone that lasts as long as the grant would have (so no late copy
// write can bring it back), and unindexes it. Writing it fails the EXEC
// of any create that read the copy under WATCH.
//
//	KEYS[1] -> <p>:{sNN}:grant:<id>
//	KEYS[2] -> <p>:{sNN}:grants:<agent>
//	ARGV[1] -> grant id
//	ARGV[2] -> its expiry, Unix ms
var tombstoneGrant = redis.NewScript(redisNowMs + `
redis.call('ZREM', KEYS[2], ARGV[1])
if tonumber(ARGV[2]) <= now then
  redis.call('DEL', KEYS[1])
  return 0
end
redis.call('SET', KEYS[1], '-')
redis.call('PEXPIREAT', KEYS[1], ARGV[2])
return 1
`)

// markRevocationAudited marks a revoked grant's revocation audited, if the
// grant still exists (an HSET on a key gone would create one without TTL).
//
//	KEYS[1] -> <p>:{grants}:grant:<id>
var markRevocationAudited = redis.NewScript(`
if redis.call('HEXISTS', KEYS[1], 'revoked_ms') == 0 then return 0 end
redis.call('HSET', KEYS[1], 'revoke_audited', '1')
return 1
`)

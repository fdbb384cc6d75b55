package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/approvalbot/approvalbot/aah"
	"github.com/redis/go-redis/v9"
)

// Applying a write in one round trip. The code that decides a write
// (queueChange, queueAudit, queueEvents, a create's fields) queues plain
// Redis commands on a go-redis Pipeline that is never executed; apply sends
// what it recorded to the applyWrite script, which checks the write's
// guards and then runs every command, all in one atomic step. Two commands
// are the script's own ("pseudo-commands"), because what they write depends
// on what is in Redis when the script runs:
//
//   - cmdGlobalAudit appends entries to a shard's global audit chain with
//     the next sequence numbers (the chain is linked later, by the sealer:
//     seal.go), so writes to one shard never serialise on its chain's head.
//   - cmdEvents appends events to a shard's event stream with ids that
//     follow the newest one (ids by the store's clock, never going back), so
//     no writer has to read the stream first.
//
// Without them every write had to WATCH the shard's audit head and event
// stream, and concurrent writes to a shard retried each other.
//
// A third is shorthand: cmdCreate writes a new request's hash, document,
// jobs and indexes (queueCreate) from its values alone, in the words of one
// command rather than the five commands' (HSET, SET, ZADD of the jobs, a
// ZADD per index), which repeated the request's id, time and key and named
// every field: issue #17, every word is a Lua string made, hashed and
// copied in Redis (~1,200 instructions), and a value boxed in Go.
const (
	cmdGlobalAudit = "@global_audit"
	cmdEvents      = "@events"
	cmdCreate      = "@create"
)

// applyWrite runs a recorded write.
//
//	KEYS    -> every key the write touches, declared for Redis Cluster (all
//	           in the request's {sNN} slot); KEYS[1] is the request's hash.
//	ARGV[1] -> write-by deadline, Unix ms by Redis's clock; 0: none (WriteBy)
//	ARGV[2] -> "1": a create, whose guards follow; "0": none
//	ARGV[3] -> create: the body hash (a stored request with the same hash
//	           and agent is a duplicate, with another hash a conflict)
//	ARGV[4] -> create: the agent
//	ARGV[5] -> create: "1" to store nothing new (StoredOnly)
//	ARGV[6] -> create: index in KEYS of the agent's grant copies of the
//	           shard, 0: none. A create that a live grant might resolve is
//	           left to the caller, which matches grants in Go (createGranted).
//	ARGV[7…] -> the commands: for each, its length n, then its n words.
//	           cmdGlobalAudit: chain, pending, base, seq counter, request
//	           hash ("" for a standalone entry), "1" to record the first seq
//	           as the request's audit_gseq0, then entries (JSON, "seq":0
//	           first).
//	           cmdEvents: stream, now ms, MINID, request hash, cursor field
//	           ("": none), then 5 words per event: request_id, agent,
//	           type, at, data.
//	           cmdCreate (the request's hash is KEYS[1]): document key
//	           (not a field: storedDocument says why), document, jobs key,
//	           now ms (received_ms, updated_ms and the indexes' score), id
//	           (the indexes' member), agent, body hash, channel,
//	           audit_head, deadline index key and score ("" when none),
//	           the number of job words then the jobs' score and member
//	           pairs, the number of other field words then those fields'
//	           name and value pairs, then the index keys.
//
// Returns {"ok", the event cursor a cmdEvents wrote ("" when none)}, or
// {what stopped it with nothing written}: "deadline", "duplicate",
// "conflict", "notfound", "grants" or "notadmitted".
var applyWrite = redis.NewScript("local argc = #ARGV\nlocal beforeCommands, notAdmitted\n" + applyWriteSrc)

// applyWriteSrc is applyWrite's text, which reads its ARGV up to argc
// (the last of its own: createAndQueue passes more after them), refuses a
// create that is not a duplicate when notAdmitted is true (createAndQueue
// applied the agent's limits, which refused it: checked after the
// duplicate check, so a resubmission is answered whatever the limits
// say), and runs beforeCommands, when set, once its guards passed and
// before it writes anything (createAndQueue queues the post then).
const applyWriteSrc = `
-- Redis's clock, read only by a write that has a deadline or grants to
-- check (not a create's, nearly always: one call of ~30 fewer).
local now
local function clock()
  if not now then
    local t = redis.call('TIME')
    now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  end
  return now
end
if ARGV[2] == '1' then
  local h = redis.call('HMGET', KEYS[1], 'hash', 'agent')
  if h[1] then
    if h[1] == ARGV[3] and h[2] == ARGV[4] then return {'duplicate'} end
    if notAdmitted then return {'notadmitted'} end
    return {'conflict'}
  end
  if ARGV[5] == '1' then return {'notfound'} end
  if notAdmitted then return {'notadmitted'} end
end
local by = ARGV[1] + 0
if by > 0 and clock() >= by then return {'deadline'} end
if ARGV[2] == '1' and ARGV[6] ~= '0' then
  if redis.call('ZCOUNT', KEYS[tonumber(ARGV[6])], '(' .. clock(), '+inf') > 0 then return {'grants'} end
end
local cursorAt = ''
-- Fields a pseudo-command sets on the request's hash (stash: the key, then
-- fields and values) wait for the next command: an HSET of the same hash
-- writes them with its own, one call instead of two (its own fields come
-- after them, so they win a field both name, as when it ran second);
-- anything else has them written just before it.
local stash
local function flush()
  if stash then
    redis.call('HSET', unpack(stash))
    stash = nil
  end
end

local function globalAudit(a, last)
  local chain, pending, base, counter, req = ARGV[a], ARGV[a + 1], ARGV[a + 2], ARGV[a + 3], ARGV[a + 4]
  -- The last seq given out is the base's plus the two lists' lengths; the
  -- counter keeps that sum, so a write reads one key, not three. Missing
  -- (never kept yet, or evicted), INCRBY starts it at this write's count:
  -- the sum is taken then and the counter set to follow it.
  local n = math.max(last - (a + 6) + 1, 0)
  local seq = redis.call('INCRBY', counter, string.format('%d', n)) - n
  if seq == 0 then
    local sum = tonumber(string.match(redis.call('GET', base) or '', '^%d+') or '0')
      + redis.call('LLEN', chain) + redis.call('LLEN', pending)
    if sum > 0 then
      redis.call('SET', counter, sum + n)
      seq = sum
    end
  end
  local first = seq + 1
  local entries = {}
  for j = a + 6, last do
    seq = seq + 1
    entries[#entries + 1] = string.format('{"seq":%d', seq) .. string.sub(ARGV[j], 9)
  end
  if #entries > 0 then redis.call('RPUSH', pending, unpack(entries)) end
  if req == '' then return end
  if ARGV[a + 5] == '1' and #entries > 0 then
    stash = {req, 'audit_gseq0', string.format('%d', first), 'audit_gseq', string.format('%d', seq)}
  else
    stash = {req, 'audit_gseq', string.format('%d', seq)}
  end
end

local function xadd(a, j, id)
  return redis.call('XADD', ARGV[a], 'MINID', ARGV[a + 2], id,
    'request_id', ARGV[j], 'agent', ARGV[j + 1], 'type', ARGV[j + 2], 'at', ARGV[j + 3], 'data', ARGV[j + 4])
end

local function events(a, last)
  local stream, at, req, cursor = ARGV[a], ARGV[a + 1] + 0, ARGV[a + 3], ARGV[a + 4]
  if cursor == '' then
    -- Ids at the write's time, numbered on by Redis (XADD <ms>-*, Redis
    -- 7), unless the stream already holds a later one (another process's
    -- clock ahead): then Redis refuses it, nothing is added, and the ids
    -- follow the newest below. Without a cursor to record, the newest
    -- need not be read.
    local r = redis.pcall('XADD', stream, 'MINID', ARGV[a + 2], ARGV[a + 1] .. '-*', 'request_id', ARGV[a + 5],
      'agent', ARGV[a + 6], 'type', ARGV[a + 7], 'at', ARGV[a + 8], 'data', ARGV[a + 9])
    if type(r) ~= 'table' or not r.err then
      for j = a + 10, last, 5 do xadd(a, j, ARGV[a + 1] .. '-*') end
      return
    end
  end
  local newest = redis.call('XREVRANGE', stream, '+', '-', 'COUNT', 1)
  local id = '0-0'
  if #newest > 0 then id = newest[1][1] end
  if cursor ~= '' then
    redis.call('HSET', req, cursor, id)
    cursorAt = id
  end
  local ms, seq = string.match(id, '^(%d+)-(%d+)$')
  ms, seq = tonumber(ms), tonumber(seq)
  for j = a + 5, last, 5 do
    if at > ms then ms, seq = at, 0 else seq = seq + 1 end
    xadd(a, j, string.format('%d-%d', ms, seq))
  end
end

-- A new request (cmdCreate, its words at a .. last); fields the global
-- audit stashed for its hash are written with its own.
local function create(a, last)
  if stash and stash[1] ~= KEYS[1] then flush() end
  local h = stash or {KEYS[1]}
  stash = nil
  local ms, id = ARGV[a + 3], ARGV[a + 4]
  local n = #h
  h[n + 1], h[n + 2], h[n + 3], h[n + 4] = 'agent', ARGV[a + 5], 'status', '` + string(aah.StatusPending) + `'
  h[n + 5], h[n + 6], h[n + 7], h[n + 8] = 'hash', ARGV[a + 6], 'channel', ARGV[a + 7]
  h[n + 9], h[n + 10], h[n + 11], h[n + 12] = 'received_ms', ms, 'updated_ms', ms
  h[n + 13], h[n + 14] = 'audit_head', ARGV[a + 8]
  local jobs = a + 12
  local more = jobs + ARGV[a + 11]
  for j = more + 1, more + ARGV[more] do h[#h + 1] = ARGV[j] end
  redis.call('HSET', unpack(h))
  redis.call('SET', ARGV[a], ARGV[a + 1])
  if more > jobs then redis.call('ZADD', ARGV[a + 2], unpack(ARGV, jobs, more - 1)) end
  for j = more + ARGV[more] + 1, last do redis.call('ZADD', ARGV[j], ms, id) end
  if ARGV[a + 9] ~= '' then redis.call('ZADD', ARGV[a + 9], ARGV[a + 10], id) end
end

if beforeCommands then beforeCommands() end
local i = 7
while i <= argc do
  local n = ARGV[i] + 0
  local cmd = ARGV[i + 1]
  if stash and cmd == 'hset' and ARGV[i + 2] == stash[1] then
    for j = i + 3, i + n do stash[#stash + 1] = ARGV[j] end
    redis.call('HSET', unpack(stash))
    stash = nil
  elseif cmd == '` + cmdCreate + `' then
    create(i + 2, i + n)
  else
    flush()
    if cmd == '` + cmdGlobalAudit + `' then
      globalAudit(i + 2, i + n)
    elseif cmd == '` + cmdEvents + `' then
      events(i + 2, i + n)
    else
      redis.call(unpack(ARGV, i + 1, i + n))
    end
  end
  i = i + n + 1
end
flush()
return {'ok', cursorAt}
`

// applyCommandsAt is the index in write.args's argv of the first
// command's length (applyWrite's ARGV[7]).
const applyCommandsAt = 6

// write is a recorded write and its guards.
type write struct {
	cmds    []redis.Cmder
	writeBy int64 // ms; 0: none
	create  *createGuard
	// sealShard is the shard whose global chain the write appends to (-1:
	// none): the sealer is woken for it once the write applied.
	sealShard int
}

// createGuard is what a create checks before it writes anything.
type createGuard struct {
	hash, agent string
	storedOnly  bool
	grantsKey   string // the agent's grant copies of the shard; "": unchecked
}

// Outcomes of applyWrite other than "ok", as errors.
var (
	errGrantsMayMatch = errors.New("store: a standing approval may cover the request")
)

// record returns a pipeline to record a write's commands on; it is never
// executed.
func (s *Store) record() redis.Pipeliner { return s.rdb.Pipeline() }

// args builds applyWrite's KEYS and ARGV, each allocated once at its
// final size (a create's ARGV is ~150 words: on intake's path), and KEYS
// as words too (keyWords), boxed once: those of the commands are the
// values their words hold already.
func (w write) args(reqKey string) (keys []string, keyWords, argv []any) {
	n := applyCommandsAt
	for _, c := range w.cmds {
		n += 1 + len(c.Args())
	}
	keys = make([]string, 1, 16)
	keys[0] = reqKey
	keyWords = make([]any, 1, 16)
	keyWords[0] = reqKey
	// key is k's index in KEYS, adding it: a write declares ~10-20 keys,
	// which a linear search finds sooner than a map is built.
	key := func(word any) int {
		k, ok := word.(string)
		if !ok {
			panic(fmt.Sprintf("store: a recorded command names a key that is not a string: %T", word))
		}
		if k == "" {
			return 0
		}
		for i, have := range keys {
			if have == k {
				return i + 1
			}
		}
		keys = append(keys, k)
		keyWords = append(keyWords, word)
		return len(keys)
	}
	argv = make([]any, 0, n)
	argv = append(argv, w.writeBy)
	if g := w.create; g != nil {
		argv = append(argv, "1", g.hash, g.agent, boolArg(g.storedOnly), key(g.grantsKey))
	} else {
		argv = append(argv, "0", "", "", "0", 0)
	}
	for _, c := range w.cmds {
		a := c.Args()
		argv = append(argv, len(a))
		argv = append(argv, a...)
		switch name, _ := a[0].(string); name {
		case cmdGlobalAudit:
			for _, k := range a[1:6] {
				key(k)
			}
		case cmdEvents:
			key(a[1])
			key(a[4])
		case cmdCreate:
			for _, k := range createKeys(a) {
				key(k)
			}
		case "publish":
			// A channel, not a key (in any slot: PUBLISH reaches every
			// node of a Cluster from whichever runs the script).
		default:
			key(a[1])
		}
	}
	return keys, keyWords, argv
}

// createKeys are the keys a cmdCreate's words name, other than the
// request's hash (KEYS[1]): its document, jobs, deadline index (when it
// has a deadline) and indexes.
func createKeys(a []any) []any {
	keys := []any{a[createDocKey], a[createJobsKey]}
	if a[createDeadlineKey] != "" {
		keys = append(keys, a[createDeadlineKey])
	}
	jobs, _ := a[createJobWords].(int)
	more := createJobWords + 1 + jobs
	fields, _ := a[more].(int)
	return append(keys, a[more+1+fields:]...)
}

// Where cmdCreate's words are, counted from its name (0).
const (
	createDocKey      = 1
	createJobsKey     = 3
	createDeadlineKey = 10
	createJobWords    = 12 // the number of words of the jobs' pairs that follow
)

func boolArg(b bool) string {
	if b {
		return "1"
	}
	return "0"
}

// apply runs w in one round trip (the request is reqKey). Its errors:
// ErrWriteDeadline, errDuplicate, ErrConflict, ErrNotFound,
// errGrantsMayMatch, or Redis's.
func (s *Store) apply(ctx context.Context, reqKey string, w write) (cursor string, err error) {
	keys, _, argv := w.args(reqKey)
	res, err := applyWrite.Run(ctx, s.rdb, keys, argv...).StringSlice()
	if err != nil {
		return "", err
	}
	return s.applied(res, w)
}

// loadWrite loads applyWrite into Redis, once until Redis is found to
// have forgotten it: before a WATCH transaction that runs it (applyInTx),
// never inside one, whose connection is held meanwhile (the script loaded
// from another, with every connection of the pool held by a transaction,
// would wait for the pool's timeout). A create on one node runs
// createAndQueue, so a process may update before it ever ran applyWrite.
func (s *Store) loadWrite(ctx context.Context) error {
	if s.writeLoaded.Load() {
		return nil
	}
	if err := applyWrite.Load(ctx, s.rdb).Err(); err != nil {
		return fmt.Errorf("load the write script: %w", err)
	}
	s.writeLoaded.Store(true)
	return nil
}

// applyInTx queues w on a WATCH transaction: it applies only if nothing
// watched changed (the EXEC fails with redis.TxFailedErr otherwise). The
// script is the MULTI's only command, so a script cache flushed since it
// was loaded (NOSCRIPT) fails the whole transaction, never half of it: the
// caller loads it again (loadWrite, before its next WATCH) and retries.
func (s *Store) applyInTx(ctx context.Context, tx *redis.Tx, reqKey string, w write) (cursor string, err error) {
	keys, _, argv := w.args(reqKey)
	var res *redis.Cmd
	_, err = tx.TxPipelined(ctx, func(p redis.Pipeliner) error {
		res = applyWrite.EvalSha(ctx, p, keys, argv...)
		return nil
	})
	if err != nil {
		if redis.HasErrorPrefix(err, "NOSCRIPT") {
			// The caller decides again, having loaded it (loadWrite) with
			// no WATCH held.
			s.writeLoaded.Store(false)
			return "", redis.TxFailedErr
		}
		return "", err
	}
	out, err := res.StringSlice()
	if err != nil {
		return "", err
	}
	return s.applied(out, w)
}

func (s *Store) applied(res []string, w write) (cursor string, err error) {
	if len(res) == 0 {
		return "", errors.New("store: empty answer of the write script")
	}
	switch res[0] {
	case "ok":
		if w.sealShard >= 0 {
			s.wakeSealer(w.sealShard)
		}
		if len(res) > 1 {
			cursor = res[1]
		}
		return cursor, nil
	case "deadline":
		return "", ErrWriteDeadline
	case "duplicate":
		return "", errDuplicate
	case "conflict":
		return "", ErrConflict
	case "notfound":
		return "", ErrNotFound
	case "grants":
		return "", errGrantsMayMatch
	case "notadmitted":
		return "", ErrNotAdmitted
	}
	return "", fmt.Errorf("store: unexpected answer %q of the write script", res)
}

// writeByMs is the WriteBy deadline of ctx in Unix ms (0: none), or
// ErrWriteDeadline when it has passed already.
func writeByMs(ctx context.Context) (int64, error) {
	at, ok := ctx.Value(writeByKey{}).(time.Time)
	if !ok {
		return 0, nil
	}
	if !time.Now().Before(at) {
		return 0, ErrWriteDeadline
	}
	return at.UnixMilli(), nil
}

package store

import (
	"fmt"
	"hash/crc32"

	"github.com/approvalbot/approvalbot/aah"
)

// Shards is the number of hash-tag slots the key space is spread over. Every
// key that belongs to one request lives in that request's shard, so each Lua
// script touches a single Redis Cluster slot, and the job queues are spread
// over Shards slots instead of one hot slot. Changing it remaps existing
// requests: it is part of the data layout, not a tuning knob.
const Shards = 16

// This file builds every Redis key approvalbot uses; nothing else formats one.
//
//	<p>:{sNN}:req:<id>                 hash    one request (fields in record.go; a field holding its default is
//	                                           not stored; the event callback's, events_url, events_types,
//	                                           events_cursor, events_state, events_attempts, events_failing,
//	                                           events_error, events_next_ms, in evdelivery.go). Its "doc" field
//	                                           holds the document in requests stored before the doc key.
//	<p>:{sNN}:doc:<id>                 string  the request's document as stored (compressed: doccodec.go),
//	                                           written once by its create (fields.go: storedDocument)
//	<p>:{sNN}:idx:status:<status>      zset    request ids by status, score = received ms; none for pending
//	                                           (idx:open holds the pending ones, with partial and escalated:
//	                                           one sorted-set insert fewer per create, issue #17)
//	<p>:{sNN}:idx:agent:<agent>:all    zset    an agent's request ids, score = received ms
//	<p>:{sNN}:idx:agent:<agent>:<st>   zset    an agent's request ids in one status
//	<p>:{sNN}:idx:open                 zset    open request ids (pending, partial, escalated), score = received ms
//	<p>:{sNN}:idx:channel:<channel>    zset    open request ids by configured channel (Record.Channel), score = received ms
//	<p>:{sNN}:idx:reviewer:<user id>   zset    open request ids naming that Slack user as reviewer (named by id,
//	                                           resolved from an email, or escalated to), score = received ms
//	<p>:{sNN}:idx:unnamed              zset    open request ids naming nobody who may decide them (the default
//	                                           reviewers do: NewRequest.Unnamed), score = received ms
//	<p>:{sNN}:idx:deadline             zset    open request ids with a deadline, score = effective deadline ms
//	<p>:{sNN}:jobs:due                 zset    job id -> due time (ms); "evdeliver:<id>" is a request's
//	                                           event callback job (evdelivery.go)
//	<p>:{sNN}:jobs:inflight            zset    job id -> lease expiry (ms)
//	<p>:{sNN}:jobs:lease               hash    job id -> lease token of the current claim
//	<p>:{sNN}:jobs:attempts            hash    job id -> attempts so far
//	<p>:{sNN}:jobs:dead                list    dead-lettered jobs (JSON), newest first, capped
//	<p>:{sNN}:audit:<id>               list    the request's audit chain (JSON entries, compact since issue #17:
//	                                           auditcompact.go), oldest first
//	<p>:{sNN}:audit                    list    the shard's global audit chain, oldest first (with the
//	                                           standalone intake_refused entries of refused requests)
//	<p>:{sNN}:audit:head               string  "<seq>:<hash>" of the shard's global chain (its last sealed entry)
//	<p>:{sNN}:audit-pending            list    global entries written but not sealed yet, oldest first: their
//	                                           seqs follow the chain's, prev and hash are empty (seal.go)
//	<p>:{sNN}:audit-base               string  "<seq>:<hash>" of the last entry the retention sweep trimmed from
//	                                           the front of the shard's global chain (absent: none was); the
//	                                           chain's first entry links to it (retention.go)
//	<p>:{sNN}:audit-seq                string  the last global seq given out in the shard: the audit-base's seq
//	                                           plus the chain's and audit-pending's lengths, kept by the write
//	                                           script rather than summed at each write (apply.go)
//	<p>:{sNN}:audit-exported           string  the export mark: the highest global seq of the shard that
//	                                           completed exports cover contiguously from entry 1 (MarkExported)
//	<p>:{sNN}:retention                hash    the last retention sweep of the shard: when (ms), how many
//	                                           closed requests past RETENTION wait for an export, since
//	                                           when the oldest unexported entry waits (ms), and where the
//	                                           next sweep goes on in each closed status index (scan_offset:<st>)
//	<p>:{sNN}:deliveries:<id>          list    callback delivery attempts (JSON), oldest first, capped
//	<p>:{sNN}:homepub:<user id>        string  when the user's last Home publish was scheduled (ms), for a window
//	<p>:{sNN}:events                   stream  the shard's progress events (progress.go): request_id, agent,
//	                                           type, at (ms), data (JSON; input:requested's document is read
//	                                           from the request's doc key: eventdoc.go); ids "<ms>-<seq>" of the store's
//	                                           clock, written with the change they describe, trimmed to
//	                                           EVENTS_RETENTION as entries are added
//	<p>:{sNN}:copies:<id>              hash    the request's other Slack messages (reminder and escalation
//	                                           copies): attempts, first attempt ms and recorded copy, per effect
//	<p>:{sNN}:grant:<grant id>         string  the shard's copy of a standing approval (JSON), or "-" once
//	                                           revoked; PEXPIREAT its expiry; a create WATCHes what it reads
//	                                           (grants.go)
//	<p>:{sNN}:grants:<agent>           zset    the shard's copies of the agent's grants, score = expiry ms;
//	                                           expires with its latest member
//	<p>:{grants}:grant:<grant id>      hash    a standing approval: id, agent, action_key, by (JSON), granted_ms,
//	                                           expires_ms, from_request, comment, revoked_ms, revoked_by (JSON),
//	                                           revoke_audited; PEXPIREAT its expiry (Redis's TIME + the duration)
//	<p>:{grants}:live                  zset    live grants of every agent, score = expiry ms
//	<p>:{grants}:agent:<agent>         zset    the agent's live grants, score = expiry ms
//	<p>:pace:{<channel>}               hash    a channel's posting pace (pace.go): t = when the last post's call to
//	                                           Slack ended (ms), h = held until (ms, a 429), p = the request whose
//	                                           post holds the turn, pu = its slot (ms), b = "1" when that post
//	                                           arrived before the last turn ended, c = the time between the last
//	                                           two turns' ends in a busy channel (ms), w:<request id> = the earliest
//	                                           that waiting post's turn can come (ms), x = a time until which this
//	                                           hash and the queue are known to live (ms: takePostTurn); its own
//	                                           hash tag, one slot per channel
//	<p>:pace:{<channel>}:q             zset    the channel's waiting posts, FIFO: request id -> arrival (ms, with
//	                                           a fraction: intake's microseconds)
//	<p>:bucket:{<agent>}               string  the agent's intake token bucket (INTAKE_RATE): "<level>:<when>", in
//	                                           takeToken's units (limits.go); its own hash tag, one slot per agent
//	<p>:open:{<agent>}                 zset    the agent's open requests counted against INTAKE_MAX_OPEN (opencap.go):
//	                                           request id -> reservation deadline (ms), or openConfirmed + ms
//	                                           once confirmed; its own hash tag, one slot per agent, like bucket
//	<p>:open:{<agent>}:meta            hash    seed = ms until which the zset is trusted without re-seeding it
//	                                           from the agent indexes; check = ms before which no reconcile runs
//	<p>:event:<event id>               string  exists while a Slack event was already received (retries are dropped)
//	<p>:slackreq:<request id>          string  exists while a Slack interaction or slash command was already applied
//	                                           (replays are dropped): "http:" + SHA-256 of its signed timestamp and
//	                                           body, or "socket:" + its Socket Mode envelope id
//	<p>:home:<user id>                 string  exists while the user's App Home tab is worth keeping fresh
//	<p>:chanid:<channel name>          string  the channel id Slack reported for a channel configured by name
//	<p>:hold:<Slack method>            string  exists while no process may call that Slack method (after a 429)
//	<p>:answered:<user id>             list    request ids the user answered lately, newest first, capped
//	<p>:changes                        pub/sub ids of stored requests that changed (wakes long polls and
//	                                           the event streams' reader)
//	<p>:created                        pub/sub ids of requests created (wakes the event streams' reader
//	                                           of the processes with streams open: changes.go)
//
// <p> is the configurable prefix (default "ab"); sNN is the shard, 00..15.
type keys struct {
	prefix string
	// shards are each shard's key prefix and own keys, formatted once: a
	// create names a dozen of them (each formatted anew was an allocation).
	shards *[Shards]shardKeys
}

// shardKeys are one shard's key prefix ("<p>:{sNN}", which every key of a
// request starts with) and its keys that name no request, agent or user.
type shardKeys struct {
	slot                                                 string
	jobs                                                 jobKeys
	open, unnamed, deadline, events, retention           string
	audit, auditHead, auditBase, auditExported, auditSeq string
	auditPending                                         string
	status                                               map[aah.Status]string
}

func newKeys(prefix string) keys {
	k := keys{prefix: prefix, shards: new([Shards]shardKeys)}
	for shard := range Shards {
		s := fmt.Sprintf("%s:{s%02d}", prefix, shard)
		sk := shardKeys{
			slot: s,
			jobs: jobKeys{
				due:      s + ":jobs:due",
				inflight: s + ":jobs:inflight",
				lease:    s + ":jobs:lease",
				attempts: s + ":jobs:attempts",
				dead:     s + ":jobs:dead",
			},
			open: s + ":idx:open", unnamed: s + ":idx:unnamed", deadline: s + ":idx:deadline",
			events: s + ":events", retention: s + ":retention",
			audit: s + ":audit", auditHead: s + ":audit:head", auditBase: s + ":audit-base",
			auditExported: s + ":audit-exported", auditSeq: s + ":audit-seq", auditPending: s + ":audit-pending",
			status: make(map[aah.Status]string, len(aah.Statuses)),
		}
		for _, st := range aah.Statuses {
			sk.status[st] = s + ":idx:status:" + string(st)
		}
		k.shards[shard] = sk
	}
	return k
}

// reservedIDs are request ids whose per-request keys would be another key:
// the request chain of "head" would be <p>:{sNN}:audit:head, the shard
// chain's head. Request ids may hold ':' but not '-', so the keys added
// since (audit-base, audit-exported) cannot collide with any.
var reservedIDs = map[string]bool{"head": true}

// ReservedID reports whether id cannot be a request id because its keys
// would collide with the store's own (intake refuses it with a 400, Create
// with ErrReservedID).
func ReservedID(id string) bool { return reservedIDs[id] }

// shardOf maps a request id to its shard.
func shardOf(requestID string) int {
	// crc32.ChecksumIEEE over the id's bytes, without converting the
	// string to a slice (an allocation, on every key of a request).
	crc := ^uint32(0)
	for i := 0; i < len(requestID); i++ {
		crc = crc32.IEEETable[byte(crc)^requestID[i]] ^ crc>>8
	}
	return int(^crc % Shards)
}

func (k keys) slot(shard int) string { return k.shards[shard].slot }

func (k keys) request(id string) string { return k.slot(shardOf(id)) + ":req:" + id }

// document is the key of a request's stored document (storedDocument in
// fields.go says why it is not a field of the request's hash).
func (k keys) document(id string) string { return k.slot(shardOf(id)) + ":doc:" + id }

func (k keys) statusIndex(shard int, st aah.Status) string {
	if key, ok := k.shards[shard].status[st]; ok {
		return key
	}
	return k.slot(shard) + ":idx:status:" + string(st)
}

// openIndex holds the shard's open requests; channelIndex, reviewerIndex,
// unnamedIndex and deadlineIndex hold subsets of it. All are maintained in
// the same transaction that creates or closes a request (Create,
// queueChange).
func (k keys) openIndex(shard int) string { return k.shards[shard].open }

func (k keys) channelIndex(shard int, channel string) string {
	return k.slot(shard) + ":idx:channel:" + channel
}

func (k keys) reviewerIndex(shard int, user string) string {
	return k.slot(shard) + ":idx:reviewer:" + user
}

func (k keys) unnamedIndex(shard int) string { return k.shards[shard].unnamed }

func (k keys) deadlineIndex(shard int) string { return k.shards[shard].deadline }

// agentIndex is the agent's index for one status, or all of its requests when st is "".
func (k keys) agentIndex(shard int, agent string, st aah.Status) string {
	if st == "" {
		return k.slot(shard) + ":idx:agent:" + agent + ":all"
	}
	return k.slot(shard) + ":idx:agent:" + agent + ":" + string(st)
}

// jobKeys are the keys of one shard's job queue, in the order the job
// scripts take them.
type jobKeys struct {
	due, inflight, lease, attempts, dead string
}

func (k keys) jobs(shard int) jobKeys { return k.shards[shard].jobs }

// pace and paceQueue are a channel's posting state and FIFO of waiting
// posts, tagged by the channel so one script sees both; a channel's posts
// come from every request shard, so they cannot live in one.
func (k keys) pace(channel string) string { return k.prefix + ":pace:{" + channel + "}" }

func (k keys) paceQueue(channel string) string { return k.pace(channel) + ":q" }

// rate is an agent's intake token bucket. It is outside the request
// shards (one agent's requests span them all) and tagged by the agent, so
// the buckets of many agents spread over a Cluster. It is a string since
// issue #17 (takeToken), where <p>:rate:{<agent>} was a hash: a name of its
// own, so a hash left by an earlier version is never read as one (it
// expires by itself).
func (k keys) rate(agent string) string { return k.prefix + ":bucket:{" + agent + "}" }

// openCount is an agent's counted open requests (INTAKE_MAX_OPEN), and
// openMeta its bookkeeping; both tagged by the agent like rate, so one
// script sees both.
func (k keys) openCount(agent string) string { return k.prefix + ":open:{" + agent + "}" }

func (k keys) openMeta(agent string) string { return k.openCount(agent) + ":meta" }

func (k keys) slackEvent(eventID string) string { return k.prefix + ":event:" + eventID }

func (k keys) slackRequest(id string) string { return k.prefix + ":slackreq:" + id }

func (k keys) channelID(name string) string { return k.prefix + ":chanid:" + name }

func (k keys) hold(method string) string { return k.prefix + ":hold:" + method }

func (k keys) home(user string) string { return k.prefix + ":home:" + user }

func (k keys) answered(user string) string { return k.prefix + ":answered:" + user }

func (k keys) auditRequest(id string) string { return k.slot(shardOf(id)) + ":audit:" + id }

func (k keys) auditShard(shard int) string { return k.shards[shard].audit }

func (k keys) auditShardHead(shard int) string { return k.shards[shard].auditHead }

// auditShardBase and auditShardExported are named "audit-…", not
// "audit:…", so that no request id can make auditRequest collide with them.
func (k keys) auditShardBase(shard int) string { return k.shards[shard].auditBase }

func (k keys) auditShardExported(shard int) string { return k.shards[shard].auditExported }

// auditShardSeq counts the global seqs given out in the shard (apply.go's
// globalAudit); "audit-…" for the same reason as the two above.
func (k keys) auditShardSeq(shard int) string { return k.shards[shard].auditSeq }

// auditShardPending holds the shard's global entries not sealed yet: their
// sequence numbers follow the chain's, their links are not written yet
// (seal.go).
func (k keys) auditShardPending(shard int) string { return k.shards[shard].auditPending }

func (k keys) retention(shard int) string { return k.shards[shard].retention }

func (k keys) deliveries(id string) string { return k.slot(shardOf(id)) + ":deliveries:" + id }

// homePublish lives in the user's shard, beside the jobs:due key its
// script schedules the user's publish job in.
func (k keys) homePublish(user string) string { return k.slot(shardOf(user)) + ":homepub:" + user }

func (k keys) copies(id string) string { return k.slot(shardOf(id)) + ":copies:" + id }

func (k keys) events(shard int) string { return k.shards[shard].events }

// grant, grantsLive and grantsOf share the {grants} hash tag: one slot
// holds every grant's record, so one script creates or revokes one.
func (k keys) grant(id string) string { return k.prefix + ":{grants}:grant:" + id }

func (k keys) grantsLive() string { return k.prefix + ":{grants}:live" }

func (k keys) grantsOf(agent string) string { return k.prefix + ":{grants}:agent:" + agent }

// grantCopy and grantCopies live in a request shard, beside the requests
// whose create matches against them (grants.go).
func (k keys) grantCopy(shard int, id string) string { return k.slot(shard) + ":grant:" + id }

func (k keys) grantCopies(shard int, agent string) string {
	return k.slot(shard) + ":grants:" + agent
}

func (k keys) changes() string { return k.prefix + ":changes" }

func (k keys) created() string { return k.prefix + ":created" }

package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/approvalbot/approvalbot/aah"
	"github.com/redis/go-redis/v9"
)

// NewRequest is what intake stores for a validated request.
type NewRequest struct {
	ID       string
	Agent    string          // authenticated agent identity (owner)
	Document json.RawMessage // the artifact as sent (with a generated id filled in)
	BodyHash string          // identifies the body for idempotent replays
	Channel  string          // Slack channel to post to
}

// Record is a stored request and everything known about its Slack message.
type Record struct {
	ID         string
	Agent      string
	Status     aah.Status
	Document   json.RawMessage
	BodyHash   string
	Channel    string
	Version    int64 // bumped by every change the message must reflect
	ReceivedAt time.Time
	UpdatedAt  time.Time
	// WithdrawnAt is set once the agent withdrew the request.
	WithdrawnAt time.Time
	// Mentions are the reviewers resolved to Slack mention syntax when the
	// message was first rendered, reused by every later update.
	Mentions []string
	Slack    SlackState
}

// SlackState is where and how the request's message was posted.
type SlackState struct {
	Channel         string // channel id Slack reported
	TS              string // message ts; empty until posted
	Permalink       string
	PostedAt        time.Time
	RenderedVersion int64
	// Error is the last Slack error code of a failed post ("channel_not_found");
	// ErrorPermanent says the bot gave up on it.
	Error          string
	ErrorPermanent bool
}

// Posted reports whether the message exists in Slack.
func (r Record) Posted() bool { return r.Slack.TS != "" }

// Job ids name a job's kind and request: "<kind>:<request id>".
const (
	JobPost = "post" // post the request's message
	JobSync = "sync" // bring the posted message up to date
)

func jobID(kind, requestID string) string { return kind + ":" + requestID }

// Create stores a new request and schedules its Slack post atomically.
// created is false when the same agent already stored the identical body (the
// stored record is returned); ErrConflict when the id is taken otherwise.
func (s *Store) Create(ctx context.Context, n NewRequest) (rec Record, created bool, err error) {
	if n.ID == "" || n.Agent == "" || len(n.Document) == 0 || n.BodyHash == "" || n.Channel == "" {
		return Record{}, false, errors.New("store: create: id, agent, document, hash and channel are required")
	}
	if !aah.ValidRequestID(n.ID) {
		return Record{}, false, fmt.Errorf("store: create: invalid request id %q", n.ID)
	}
	shard, now := shardOf(n.ID), s.nowMs()
	keys := []string{
		s.keys.request(n.ID),
		s.keys.jobs(shard).due,
		s.keys.statusIndex(shard, aah.StatusPending),
		s.keys.agentIndex(shard, n.Agent, ""),
		s.keys.agentIndex(shard, n.Agent, aah.StatusPending),
	}
	args := []any{n.BodyHash, n.Agent, now, jobID(JobPost, n.ID), n.ID,
		"id", n.ID, "agent", n.Agent, "status", string(aah.StatusPending), "doc", string(n.Document),
		"hash", n.BodyHash, "channel", n.Channel, "version", 1, "received_ms", now, "updated_ms", now}
	res, err := createRequest.Run(ctx, s.rdb, keys, args...).Int()
	if err != nil {
		return Record{}, false, fmt.Errorf("store: create request %s: %w", n.ID, err)
	}
	switch res {
	case 2:
		return Record{}, false, ErrConflict
	case 1:
		rec, err = s.Get(ctx, n.ID)
		return rec, false, err
	}
	// Created: the record is exactly what the script wrote.
	at := fromMs(now)
	return Record{ID: n.ID, Agent: n.Agent, Status: aah.StatusPending, Document: n.Document, BodyHash: n.BodyHash,
		Channel: n.Channel, Version: 1, ReceivedAt: at, UpdatedAt: at}, true, nil
}

// Get loads one request.
func (s *Store) Get(ctx context.Context, id string) (Record, error) {
	if !aah.ValidRequestID(id) {
		return Record{}, ErrNotFound
	}
	h, err := s.rdb.HGetAll(ctx, s.keys.request(id)).Result()
	if err != nil {
		return Record{}, fmt.Errorf("store: get request %s: %w", id, err)
	}
	if len(h) == 0 {
		return Record{}, ErrNotFound
	}
	return decodeRecord(h), nil
}

func decodeRecord(h map[string]string) Record {
	num := func(f string) int64 { n, _ := strconv.ParseInt(h[f], 10, 64); return n }
	return Record{
		ID:          h["id"],
		Agent:       h["agent"],
		Status:      aah.Status(h["status"]),
		Document:    json.RawMessage(h["doc"]),
		BodyHash:    h["hash"],
		Channel:     h["channel"],
		Version:     num("version"),
		ReceivedAt:  fromMs(num("received_ms")),
		UpdatedAt:   fromMs(num("updated_ms")),
		WithdrawnAt: fromMs(num("withdrawn_ms")),
		Mentions:    decodeList(h["mentions"]),
		Slack: SlackState{
			Channel:         h["slack_channel"],
			TS:              h["slack_ts"],
			Permalink:       h["permalink"],
			PostedAt:        fromMs(num("posted_ms")),
			RenderedVersion: num("rendered_version"),
			Error:           h["post_error"],
			ErrorPermanent:  h["post_error_permanent"] == "1",
		},
	}
}

// Withdraw marks an open request withdrawn. Its message is scheduled for an
// update (or its post cancelled if it was never posted). ErrNotOpen when the
// request already left the open states.
func (s *Store) Withdraw(ctx context.Context, id string) (Record, error) {
	return s.transition(ctx, id, aah.StatusWithdrawn, "withdrawn_ms")
}

// transition moves an open request to status to, retrying when the status
// changes under it (compare-and-set), so concurrent changes are serialized.
func (s *Store) transition(ctx context.Context, id string, to aah.Status, stampField string) (Record, error) {
	for range 10 {
		rec, err := s.Get(ctx, id)
		if err != nil {
			return Record{}, err
		}
		if !rec.Status.Open() {
			return rec, ErrNotOpen
		}
		shard := shardOf(id)
		keys := []string{
			s.keys.request(id),
			s.keys.statusIndex(shard, rec.Status),
			s.keys.statusIndex(shard, to),
			s.keys.agentIndex(shard, rec.Agent, rec.Status),
			s.keys.agentIndex(shard, rec.Agent, to),
			s.keys.jobs(shard).due,
			s.keys.jobs(shard).attempts,
		}
		res, err := transition.Run(ctx, s.rdb, keys, string(rec.Status), string(to), s.nowMs(), id,
			jobID(JobPost, id), jobID(JobSync, id), stampField).StringSlice()
		if err != nil && !errors.Is(err, redis.Nil) {
			return Record{}, fmt.Errorf("store: %s request %s: %w", to, id, err)
		}
		switch {
		case len(res) > 0 && res[0] == "ok":
			return s.Get(ctx, id)
		case len(res) > 0 && res[0] == "missing":
			return Record{}, ErrNotFound
		}
		// The status moved between our read and the script: read again.
	}
	return Record{}, fmt.Errorf("store: %s request %s: status kept changing", to, id)
}

// MarkPosted records the posted message. renderedVersion is the record
// version the message shows; if the request changed since, a sync job is
// scheduled so the message catches up.
func (s *Store) MarkPosted(ctx context.Context, id, channel, ts string, renderedVersion int64) error {
	keys := []string{s.keys.request(id), s.keys.jobs(shardOf(id)).due}
	res, err := markPosted.Run(ctx, s.rdb, keys, channel, ts, s.nowMs(), renderedVersion, jobID(JobSync, id)).Int()
	if err != nil {
		return fmt.Errorf("store: mark request %s posted: %w", id, err)
	}
	if res < 0 {
		return ErrNotFound
	}
	return nil
}

// MarkSynced records that the message now shows renderedVersion.
func (s *Store) MarkSynced(ctx context.Context, id string, renderedVersion int64) error {
	return s.set(ctx, id, "mark synced", "rendered_version", renderedVersion)
}

// SetPermalink stores the message's permalink.
func (s *Store) SetPermalink(ctx context.Context, id, link string) error {
	return s.set(ctx, id, "set permalink", "permalink", link)
}

// RecordPostError notes why posting failed; permanent means the bot gave up,
// and GET shows it either way.
func (s *Store) RecordPostError(ctx context.Context, id, code string, permanent bool) error {
	perm := "0"
	if permanent {
		perm = "1"
	}
	return s.set(ctx, id, "record post error", "post_error", code, "post_error_permanent", perm, "updated_ms", s.nowMs())
}

func decodeList(s string) []string {
	var out []string
	_ = json.Unmarshal([]byte(s), &out)
	return out
}

// SetMentions stores the resolved reviewer mentions.
func (s *Store) SetMentions(ctx context.Context, id string, mentions []string) error {
	raw, err := json.Marshal(mentions)
	if err != nil {
		return fmt.Errorf("store: encode mentions of %s: %w", id, err)
	}
	return s.set(ctx, id, "set mentions", "mentions", raw)
}

// set updates fields of an existing request; ErrNotFound when there is none.
func (s *Store) set(ctx context.Context, id, op string, fieldValues ...any) error {
	n, err := setFields.Run(ctx, s.rdb, []string{s.keys.request(id)}, fieldValues...).Int()
	if err != nil {
		return fmt.Errorf("store: %s of %s: %w", op, id, err)
	}
	if n == 0 {
		return ErrNotFound
	}
	return nil
}

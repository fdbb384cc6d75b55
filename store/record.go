package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/approvalbot/approvalbot/aah"
	"github.com/redis/go-redis/v9"
)

// NewRequest is what intake stores for a validated request.
type NewRequest struct {
	ID          string
	Agent       string          // authenticated agent identity (owner)
	Document    json.RawMessage // the artifact as sent (with a generated id filled in)
	BodyHash    string          // identifies the body for idempotent replays
	Channel     string          // Slack channel to post to
	ResponseURL string          // handoff.response_url, "" when the agent polls
	// Timers are the request's timed jobs (reminders, escalation, deadline),
	// scheduled with it; every one is cancelled when the request closes.
	Timers []JobAt
	// Reviewers are the Slack user ids the request names as reviewers
	// (emails resolve later, see SetMentions); they index it by reviewer.
	Reviewers []string
	// Deadline is the effective deadline, zero when none; it indexes the
	// request for "overdue" listings.
	Deadline time.Time
	// Events is the request's event callback (extensions.events), or nil.
	Events *aah.EventSubscription
	// NoRequester: the request names nobody to tell how it ended, so
	// closing it schedules no JobNotify.
	NoRequester bool
	// Unnamed: the request names nobody who may decide it (no reviewer,
	// group or role), so the workspace's default reviewers do: it is
	// filed in the shard's idx:unnamed while open, which their
	// "/approvals mine" and Home tabs read (OpenQuery.Unnamed).
	Unnamed bool
	// MatchGrants, when set, may resolve the request at once by its
	// agent's standing approvals, in the create transaction itself
	// (grants.go): nil leaves it pending.
	MatchGrants GrantMatch
}

// Record is a stored request and everything known about it since.
type Record struct {
	ID          string
	Agent       string
	Status      aah.Status
	Document    json.RawMessage
	BodyHash    string
	Channel     string
	ResponseURL string
	Version     int64 // bumped by every change the message must reflect
	ReceivedAt  time.Time
	UpdatedAt   time.Time
	// WithdrawnAt is set once the agent withdrew the request.
	WithdrawnAt time.Time
	// ResolvedAt is set once the request resolved; Response then holds the
	// decision/response artifact, immutable from then on.
	ResolvedAt time.Time
	ResolvedBy aah.Person
	Response   json.RawMessage
	// Answers holds the current answer of each decision, by decision id.
	Answers map[string]aah.Answer
	// Mentions are the reviewers resolved to Slack mention syntax when the
	// message was first rendered, reused by every later update.
	Mentions []string
	Slack    SlackState
	Delivery DeliveryState
	// Events is the event callback subscription and its delivery.
	Events EventsState
	// Timers lists the ids of the request's timed jobs still to cancel
	// when it closes.
	Timers []string
	// EscalatedTo are the Slack users the request was escalated to; they may
	// answer it like its named reviewers.
	EscalatedTo []string
	// EscalatedAt is when the request was first escalated (a step of
	// data.escalation or by hand); zero when it never was, or when it was
	// before the time was kept (see Escalated).
	EscalatedAt time.Time
	// IndexedReviewers are the Slack user ids the request is filed under in
	// the reviewer indexes while it is open (named, resolved or escalated).
	IndexedReviewers []string
	// EscalatedChannels are the channels the request was escalated to (as
	// data.escalation named them: an id or "#name").
	EscalatedChannels []string
	// EscalatedSteps are the escalation steps (indexes into data.escalation)
	// already applied, or given up on as unresolvable: a step runs once.
	EscalatedSteps []int
	// EscalationError says why escalation steps could not be resolved
	// ("step 1 (some-role): ..."); empty when every step resolved.
	EscalationError string
	// EscalationSent lists, by step, the users and channels the escalated
	// request was sent to (or that refused it for good), so a retry sends
	// only to the rest.
	EscalationSent map[int][]string
	// Reminded lists, by reminder number, the recipients that reminder has
	// been handled for (reached, or refused for good): Slack user ids, or
	// ReminderThread for the reply in the request's thread.
	Reminded map[int][]string
	// RemindersDone is the number of the last reminder completed (audited,
	// the next one scheduled); 0 before the first.
	RemindersDone int
	// Directive is the defer, change_plan or abort that closed the request
	// (a reviewer's verb); nil otherwise.
	Directive *aah.Directive
	// Reassignments are the escalations reviewers made by hand, oldest first.
	Reassignments []aah.Reassignment

	// noRequester: closing it tells nobody (NewRequest.NoRequester).
	noRequester bool
	// Unnamed: the default reviewers decide it (NewRequest.Unnamed).
	Unnamed bool
}

// ReminderThread is the recipient of a reminder posted as a reply in the
// request's thread (requests that name no reviewers).
const ReminderThread = "thread"

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
	// Attempts counts the attempts at posting the message (BeginPost);
	// FirstAttemptAt is when the first began (see sideeffects.go).
	Attempts       int
	FirstAttemptAt time.Time
	// Copies counts the reminder and escalation copies recorded
	// (RecordCopy): closing the request schedules their update.
	Copies int
	// CopyTried: an attempt at a copy began (BeginCopy); closing the
	// request schedules the copies job too, to adopt one whose answer
	// was lost.
	CopyTried bool
}

// Escalated reports whether the request was ever escalated (by a step of
// data.escalation or by hand): its status says so while it is open, and
// this stays true after it closed. A request's status stays "escalated"
// however many answers follow (see Progress for them).
func (r Record) Escalated() bool {
	return r.Status == aah.StatusEscalated || !r.EscalatedAt.IsZero() || len(r.EscalatedTo) > 0 ||
		len(r.EscalatedChannels) > 0 || len(r.Reassignments) > 0
}

// Posted reports whether the message exists in Slack.
func (r Record) Posted() bool { return r.Slack.TS != "" }

// Job ids name a job's kind and request: "<kind>:<request id>".
const (
	JobPost    = "post"    // post the request's message
	JobSync    = "sync"    // bring the posted message up to date
	JobDeliver = "deliver" // POST the decision response to the agent
	// Timers: "remind:<id>:<n>", "escalate:<id>:<step>", "expire:<id>".
	JobRemind   = "remind"
	JobEscalate = "escalate"
	JobExpire   = "expire"
	// JobHome re-publishes the App Home tabs that show the request (see
	// Options.HomeJobs): "home:<id>".
	JobHome = "home"
)

// TimerID names a request's n-th timer of a kind ("remind:<id>:2").
func TimerID(kind, requestID string, n int) string {
	return kind + ":" + requestID + ":" + strconv.Itoa(n)
}

// SplitTimer splits the request part of a numbered timer's job
// ("<id>:<n>", as Job.RequestID holds it) into the request id and n.
func SplitTimer(rest string) (requestID string, n int, ok bool) {
	i := strings.LastIndexByte(rest, ':')
	if i < 0 {
		return "", 0, false
	}
	n, err := strconv.Atoi(rest[i+1:])
	return rest[:i], n, err == nil
}

func jobID(kind, requestID string) string { return kind + ":" + requestID }

const answerField = "ans:" // request hash field prefix of an answer

// Get loads one request.
func (s *Store) Get(ctx context.Context, id string) (Record, error) { return s.read(ctx, id, true) }

// GetState is Get without the request's document (Document is nil): for a
// caller that needs only the request's state (its status, reviewers,
// answers), such as the Home tabs' job, which runs for nearly every request.
// Inflating the stored document is most of the CPU of decoding a record
// whose document has left the cache.
func (s *Store) GetState(ctx context.Context, id string) (Record, error) {
	return s.read(ctx, id, false)
}

func (s *Store) read(ctx context.Context, id string, document bool) (Record, error) {
	if !aah.ValidRequestID(id) {
		return Record{}, ErrNotFound
	}
	var r storedRead
	_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		r = s.queueRead(ctx, p, id, document)
		return nil
	})
	h, err := r.fields(err)
	if err != nil {
		return Record{}, fmt.Errorf("store: get request %s: %w", id, err)
	}
	if len(h) == 0 {
		return Record{}, ErrNotFound
	}
	return decodeRecord(id, h), nil
}

// decodeRecord reads the fields of request id's hash. The id is not read
// from them: records written since issue #17 do not store it.
func decodeRecord(id string, h map[string]string) Record {
	num := func(f string) int64 { n, _ := strconv.ParseInt(h[f], 10, 64); return n }
	rec := Record{
		ID:          id,
		Agent:       h["agent"],
		Status:      aah.Status(h["status"]),
		BodyHash:    h["hash"],
		Channel:     h["channel"],
		ResponseURL: h["response_url"],
		Version:     max(num("version"), 1), // 1 is not stored (Create)
		ReceivedAt:  fromMs(num("received_ms")),
		UpdatedAt:   fromMs(num("updated_ms")),
		WithdrawnAt: fromMs(num("withdrawn_ms")),
		ResolvedAt:  fromMs(num("resolved_ms")),
		ResolvedBy:  decodePerson(h["resolved_by"]),
		Mentions:    decodeMentions(h["mentions"]),
		Timers:      decodeTimerIDs(id, h["timers"]),
		EscalatedTo: decodeTimers(h["escalated_to"]),
		EscalatedAt: fromMs(num("escalated_ms")),

		IndexedReviewers: decodeUsers(h[reviewerIdxField]),

		EscalatedChannels: decodeTimers(h["escalated_channels"]),
		EscalationError:   h["escalation_error"],
		RemindersDone:     int(num("reminders_done")),
		// "directive" and "reassignments" are JSON (aah.Directive, a list of
		// aah.Reassignment), written by Change.Directive and Reassignment.
		Directive:     decodeDirective(h["directive"]),
		Reassignments: decodeReassignments(h["reassignments"]),
		Slack: SlackState{
			Channel:         h["slack_channel"],
			TS:              h["slack_ts"],
			Permalink:       expandPermalink(h["permalink"], h["slack_channel"], h["slack_ts"]),
			PostedAt:        fromMs(num("posted_ms")),
			RenderedVersion: renderedVersion(h),
			Error:           h["post_error"],
			ErrorPermanent:  h["post_error_permanent"] == "1",
			Attempts:        int(num("post_attempts")),
			FirstAttemptAt:  fromMs(num("post_first_ms")),
			Copies:          int(num("slack_copies")),
			CopyTried:       h["copy_tried"] == "1",
		},
		Delivery: decodeDelivery(h),
		Events:   decodeEventsState(h),

		noRequester: h[noRequesterField] == "1",
		Unnamed:     h[unnamedField] == "1",
	}
	if v := h["doc"]; v != "" {
		if doc, err := decodeDoc(v); err == nil {
			rec.Document = doc
		} // else left empty: a corrupt document reads as none, as a missing one does
	}
	if r := h["response"]; r != "" {
		rec.Response = json.RawMessage(r)
	}
	_ = json.Unmarshal([]byte(h["escalated_steps"]), &rec.EscalatedSteps)
	numbered := func(m *map[int][]string, k, prefix, v string) {
		n, err := strconv.Atoi(strings.TrimPrefix(k, prefix))
		if err != nil {
			return
		}
		if *m == nil {
			*m = map[int][]string{}
		}
		(*m)[n] = decodeList(v)
	}
	for k, v := range h {
		switch {
		case strings.HasPrefix(k, remindedField):
			numbered(&rec.Reminded, k, remindedField, v)
			continue
		case strings.HasPrefix(k, escalationSentField):
			numbered(&rec.EscalationSent, k, escalationSentField, v)
			continue
		}
		if decisionID, ok := strings.CutPrefix(k, answerField); ok {
			if a, ok := decodeAnswer(v); ok {
				if rec.Answers == nil {
					rec.Answers = map[string]aah.Answer{}
				}
				rec.Answers[decisionID] = a
			}
		}
	}
	return rec
}

// decodeAnswer reads an answer field ("ans:<decision id>": the aah.Answer
// as JSON). Comments are a list, "comments": [{by, at, text}], one per
// person. Records written before that kept one slot per decision,
// "comment" and "comment_by" (the last comment only, with no time); such a
// slot reads as a one-entry list, its author the answer's when it named none.
func decodeAnswer(v string) (aah.Answer, bool) {
	var a aah.Answer
	if json.Unmarshal([]byte(v), &a) != nil {
		return aah.Answer{}, false
	}
	if len(a.Comments) == 0 {
		var legacy struct {
			Comment   string     `json:"comment"`
			CommentBy aah.Person `json:"comment_by"`
		}
		if json.Unmarshal([]byte(v), &legacy) == nil && strings.TrimSpace(legacy.Comment) != "" {
			by := legacy.CommentBy
			if by.ID == "" {
				by = a.By
			}
			a.Comments = []aah.Comment{{By: by, Text: legacy.Comment}}
		}
	}
	return a, true
}

// decodeDirective reads the "directive" field; absent is nil.
func decodeDirective(s string) *aah.Directive {
	if s == "" {
		return nil
	}
	var d aah.Directive
	if json.Unmarshal([]byte(s), &d) != nil {
		return nil
	}
	return &d
}

// decodeReassignments reads the "reassignments" field; none is nil.
func decodeReassignments(s string) []aah.Reassignment {
	var out []aah.Reassignment
	_ = json.Unmarshal([]byte(s), &out)
	if len(out) == 0 {
		return nil
	}
	return out
}

// MarkPosted records the posted message, fenced like RecordPost (which
// the poster uses); a sweep it needs is due at once.
func (s *Store) MarkPosted(ctx context.Context, id, channel, ts string, renderedVersion int64) error {
	return s.RecordPost(ctx, id, channel, ts, renderedVersion, s.now())
}

// MarkSynced records that the message now shows renderedVersion.
func (s *Store) MarkSynced(ctx context.Context, id string, renderedVersion int64) error {
	return s.set(ctx, id, "mark synced", renderedVersionField, renderedVersion)
}

// SetPermalink stores the message's permalink. With HomeJobs it schedules
// the request's home job in the same script: the one MarkPosted scheduled
// may already have run without the link (the poster fetches the link after
// marking the message posted), and no later change would add it. Nothing
// else of the request is read or changed, so one script does it, with no
// transaction (a post makes this write for every request).
// The link is of the message in channel at ts, as RecordPost stored them:
// when it is Slack's usual one for them, only its host is stored
// (compactPermalink).
func (s *Store) SetPermalink(ctx context.Context, id, channel, ts, link string) error {
	stored := compactPermalink(channel, ts, link)
	if !s.homeJobs {
		return s.set(ctx, id, "set permalink", "permalink", stored)
	}
	n, err := setFieldsAndJob.Run(ctx, s.rdb, []string{s.keys.request(id), s.keys.jobs(shardOf(id)).due},
		jobID(JobHome, id), s.nowMs(), "permalink", stored).Int()
	if err != nil {
		return fmt.Errorf("store: set permalink of %s: %w", id, err)
	}
	if n == 0 {
		return ErrNotFound
	}
	return nil
}

// RecordPostError notes why posting failed; permanent means the bot gave up,
// which is audited. GET shows it either way.
func (s *Store) RecordPostError(ctx context.Context, id, code string, permanent bool) error {
	if !permanent {
		return s.set(ctx, id, "record post error", "post_error", code, "post_error_permanent", "0", "updated_ms", s.nowMs())
	}
	_, err := s.Update(ctx, id, func(Record) (*Change, error) {
		return &Change{
			set:   map[string]any{"post_error": code, "post_error_permanent": "1"},
			Audit: []AuditEvent{{Event: "post_failed", Actor: "system", Data: map[string]any{"error": code}}},
		}, nil
	})
	return err
}

// SetMentions stores the resolved reviewer mentions. The users they name
// ("<@U123>") join the reviewer index in the same transaction while the
// request is open, so reviewers named by email find it too; so do members,
// the other people who may decide it (members of its reviewer groups and
// roles, resolved when it was posted).
func (s *Store) SetMentions(ctx context.Context, id string, mentions []string, members ...string) error {
	raw := encodeMentions(mentions)
	users := slices.Clone(members)
	for _, m := range mentions {
		if u, ok := strings.CutPrefix(m, "<@"); ok && strings.HasSuffix(u, ">") {
			users = append(users, strings.TrimSuffix(u, ">"))
		}
	}
	err := s.change(ctx, id, func(rec Record) (*Change, error) {
		ch := &Change{set: map[string]any{"mentions": raw}, AddReviewers: users, Quiet: true}
		if len(mentions) == 0 && len(rec.Mentions) == 0 {
			ch.set = nil // none: an absent field reads as none, and costs no Redis memory
		}
		return ch, nil
	})
	if err != nil && !errors.Is(err, ErrNotFound) {
		return fmt.Errorf("store: set mentions of %s: %w", id, err)
	}
	return err
}

// renderedVersionField is the version a posted request's message shows
// (SlackState.RenderedVersion). RecordPost leaves it out when it is 1, as
// it is for nearly every post: renderedVersion reads it back.
const renderedVersionField = "rendered_version"

// renderedVersion decodes renderedVersionField: absent on a posted request
// it is 1 (records posted before it could be absent always have it), on
// one not posted 0.
func renderedVersion(h map[string]string) int64 {
	v, ok := h[renderedVersionField]
	if !ok {
		if h["slack_ts"] != "" {
			return 1
		}
		return 0
	}
	n, _ := strconv.ParseInt(v, 10, 64)
	return n
}

// noRequesterField marks a request that names no requester (NewRequest.NoRequester).
const noRequesterField = "no_requester"

// unnamedField marks a request that names nobody who may decide it
// (NewRequest.Unnamed).
const unnamedField = "unnamed"

// uniqueUsers appends to have the users of add it lacks, keeping order.
func uniqueUsers(have, add []string) []string {
	out := slices.Clone(have)
	for _, u := range add {
		if u != "" && !slices.Contains(out, u) {
			out = append(out, u)
		}
	}
	return out
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

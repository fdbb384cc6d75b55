package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// Delivery states of a request's decision response.
const (
	DeliveryNone      = ""          // no response yet, or no response_url (the agent polls)
	DeliveryPending   = "pending"   // scheduled, not attempted yet
	DeliveryRetrying  = "retrying"  // an attempt failed; another is scheduled
	DeliveryDelivered = "delivered" // the agent answered 2xx
	DeliveryDead      = "dead"      // attempts exhausted; in the dead-letter list, can be redelivered
	DeliveryGone      = "gone"      // the agent answered 410 Gone: never retried
)

// maxDeliveryLog caps the stored attempts of one request.
const maxDeliveryLog = 100

// DeliveryState is where the callback of a resolved request stands.
type DeliveryState struct {
	State         string
	Attempts      int
	LastError     string
	DeliveredAt   time.Time
	NextAttemptAt time.Time
	// WebhookID is the Standard Webhooks message id, the same on every retry.
	WebhookID string
	// RoundStart is how many attempts came before the current round of
	// retries: a redelivery starts a new round with the whole schedule.
	RoundStart int
	// Gen counts redeliveries. An attempt started in an earlier generation
	// (it was in flight when the agent asked for a redelivery) is logged but
	// cannot change the state the redelivery set.
	Gen int
}

// DeliveryAttempt is one POST of the response to the agent.
type DeliveryAttempt struct {
	N          int       `json:"n"`
	At         time.Time `json:"at"`
	URL        string    `json:"url"`
	Status     int       `json:"status,omitempty"` // HTTP status, 0 when none arrived
	Error      string    `json:"error,omitempty"`
	DurationMs int64     `json:"duration_ms"`
	// Gen is the DeliveryState.Gen the attempt was started in.
	Gen int `json:"gen,omitempty"`
	// NextAttemptAt is when the next attempt is due, if one is.
	NextAttemptAt *time.Time `json:"next_attempt_at,omitempty"`
}

func decodeDelivery(h map[string]string) DeliveryState {
	num := func(f string) int64 { n, _ := strconv.ParseInt(h[f], 10, 64); return n }
	return DeliveryState{
		State:         h["delivery_state"],
		Attempts:      int(num("delivery_attempts")),
		LastError:     h["delivery_error"],
		DeliveredAt:   fromMs(num("delivered_ms")),
		NextAttemptAt: fromMs(num("delivery_next_ms")),
		WebhookID:     h["webhook_id"],
		RoundStart:    int(num("delivery_round_start")),
		Gen:           int(num("delivery_gen")),
	}
}

// RecordDeliveryAttempt stores an attempt and the state it leads to
// (DeliveryDelivered, DeliveryRetrying, DeliveryDead or DeliveryGone), with
// its audit entry, atomically. A retrying attempt must carry NextAttemptAt:
// the next deliver job is scheduled then, in the same transaction, so a crash
// between the two cannot lose it. A dead delivery also goes to the shard's
// dead-letter list.
func (s *Store) RecordDeliveryAttempt(ctx context.Context, id string, a DeliveryAttempt, state string) error {
	if state == DeliveryRetrying && a.NextAttemptAt == nil {
		return fmt.Errorf("store: record delivery of %s: a retrying attempt needs NextAttemptAt", id)
	}
	event := map[string]string{
		DeliveryDelivered: "delivery_succeeded", DeliveryRetrying: "delivery_attempted",
		DeliveryDead: "delivery_dead_lettered", DeliveryGone: "delivery_gone",
	}[state]
	if event == "" {
		return fmt.Errorf("store: record delivery of %s: unknown state %q", id, state)
	}
	_, err := s.Update(ctx, id, func(rec Record) (*Change, error) {
		if a.Gen != rec.Delivery.Gen {
			// A redelivery was asked for while this attempt ran: keep its
			// record, but leave the state and the queued job to the redelivery.
			return &Change{push: []listPush{{Key: s.keys.deliveries(id), Value: mustJSON(a), Cap: maxDeliveryLog}},
				Audit: []AuditEvent{{Event: "delivery_attempted", Actor: "system",
					Data: map[string]any{"attempt": a.N, "status": a.Status, "superseded_by_redelivery": true}}}}, nil
		}
		set := map[string]any{"delivery_state": state, "delivery_attempts": a.N, "delivery_error": a.Error}
		var del []string
		if a.NextAttemptAt != nil {
			set["delivery_next_ms"] = a.NextAttemptAt.UnixMilli()
		} else {
			del = append(del, "delivery_next_ms")
		}
		if state == DeliveryDelivered {
			set["delivered_ms"] = a.At.UnixMilli()
		}
		data := map[string]any{"attempt": a.N, "status": a.Status}
		if a.Error != "" {
			data["error"] = a.Error
		}
		ch := &Change{set: set, del: del, Audit: []AuditEvent{{Event: event, Actor: "system", Data: data}},
			push: []listPush{{Key: s.keys.deliveries(id), Value: mustJSON(a), Cap: maxDeliveryLog}}}
		switch state {
		case DeliveryRetrying:
			ch.Jobs = []JobAt{{ID: jobID(JobDeliver, id), At: *a.NextAttemptAt}}
		case DeliveryDead:
			ch.push = append(ch.push, listPush{Key: s.keys.jobs(shardOf(id)).dead, Cap: int64(s.deadCap),
				Value: mustJSON(DeadJob{ID: jobID(JobDeliver, id), Attempts: a.N, Error: a.Error, DiedAt: a.At.UTC()})})
		}
		return ch, nil
	})
	return err
}

// Deliveries lists a request's delivery attempts, oldest first.
func (s *Store) Deliveries(ctx context.Context, id string) ([]DeliveryAttempt, error) {
	raw, err := s.rdb.LRange(ctx, s.keys.deliveries(id), 0, -1).Result()
	if err != nil && !errors.Is(err, redis.Nil) {
		return nil, fmt.Errorf("store: deliveries of %s: %w", id, err)
	}
	out := make([]DeliveryAttempt, 0, len(raw))
	for _, r := range raw {
		var a DeliveryAttempt
		if json.Unmarshal([]byte(r), &a) == nil {
			out = append(out, a)
		}
	}
	return out, nil
}

// ErrNothingToDeliver means a redelivery was asked for a request that has no
// response or no response_url.
var ErrNothingToDeliver = errors.New("store: the request has no response to deliver")

// Redeliver schedules the response's delivery again now, whatever its state
// (an agent may have lost a delivered response, or fixed its endpoint after
// the retries ran out), with a fresh round of the retry schedule. Attempt
// numbers continue; the webhook id stays.
func (s *Store) Redeliver(ctx context.Context, id, actor string) (Record, error) {
	return s.Update(ctx, id, func(rec Record) (*Change, error) {
		if len(rec.Response) == 0 || rec.ResponseURL == "" {
			return nil, ErrNothingToDeliver
		}
		return &Change{
			set: map[string]any{"delivery_state": DeliveryPending, "delivery_round_start": rec.Delivery.Attempts,
				"delivery_gen": rec.Delivery.Gen + 1},
			del:   []string{"delivery_next_ms"},
			Jobs:  []JobAt{{ID: jobID(JobDeliver, id), At: s.now()}},
			Audit: []AuditEvent{{Event: "redelivery_requested", Actor: actor}},
		}, nil
	})
}

package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// Admission is an agent's intake limits, applied by Create itself when ctx
// carries it (AdmitOnCreate): on one Redis node in the create's own round
// trip, the limits' script first in the pipeline and the create admitted
// only if it reserved the request a slot (applyWrite's open-count guard);
// on a Cluster, whose limits are on another node, by Admit just before.
// Intake paid a round trip for its limits and another for its create.
//
// Create fills in Decided, Decision and Slot once the limits have been
// applied, whatever the create's outcome: the caller settles the slot, or
// answers the refusal, from them. A create the limits did not admit fails
// with ErrNotAdmitted (nothing stored); so does one whose admission needed
// more than the pipeline could do (a count to seed or reconcile first,
// done by then): the caller creates it again under WriteBy(Slot.CreateBy)
// when Decision and Slot allow it.
type Admission struct {
	Agent   string
	Rate    Rate
	MaxOpen int // 1 or more: an admission reserves a slot under the cap
	Lease   time.Duration

	Decided  bool
	Decision RateDecision
	Slot     OpenSlot
}

// ErrNotAdmitted is Create's error for a create its Admission did not admit.
var ErrNotAdmitted = errors.New("store: the create was not admitted by the agent's intake limits")

type admissionKey struct{}

// AdmitOnCreate returns a context under which Create applies adm's limits
// to the request before it creates it (see Admission).
func AdmitOnCreate(ctx context.Context, adm *Admission) context.Context {
	return context.WithValue(ctx, admissionKey{}, adm)
}

func admissionOf(ctx context.Context) *Admission {
	adm, _ := ctx.Value(admissionKey{}).(*Admission)
	return adm
}

// admitCall is an admission's script call, queued before the create.
type admitCall struct {
	adm        *Admission
	script     *redis.Script
	keys       []string
	args       []any
	now        int64
	slot       OpenSlot // the reservation asked for
	rateOff    bool     // the script is reserveOpen alone: its answer has no rate part
	answer     []any
	answerErr  error
	openKey    string
	reservedAt int64 // the reservation's score
}

// admitCallFor is adm's script call for request id: admitIntake, or
// reserveOpen alone when the rate is off.
func (s *Store) admitCallFor(adm *Admission, id string) *admitCall {
	now := s.nowMs()
	slot := OpenSlot{agent: adm.Agent, id: id, score: now + adm.Lease.Milliseconds(), CreateBy: time.Now().Add(adm.Lease / 2)}
	c := &admitCall{adm: adm, now: now, slot: slot, openKey: s.keys.openCount(adm.Agent), reservedAt: slot.score}
	reserveArgs := []any{now, slot.score, adm.MaxOpen, id, OpenReconcileEvery.Milliseconds(), openConfirmedArg}
	if adm.Rate.Off() {
		c.script, c.rateOff = reserveOpen, true
		c.keys = []string{c.openKey, s.keys.openMeta(adm.Agent)}
		c.args = reserveArgs
		return c
	}
	c.script = admitIntake
	c.keys = []string{s.keys.rate(adm.Agent), c.openKey, s.keys.openMeta(adm.Agent)}
	c.args = append([]any{now, max(adm.Rate.Per.Milliseconds(), 1), adm.Rate.Count, adm.Rate.Burst, "1"}, reserveArgs...)
	return c
}

// decide reads the admission's answer into its Admission, finishing what
// the script could not (seeding or reconciling the count, or running the
// limits again when the script did not run at all). It reports whether the
// create that followed it in the pipeline was admitted as it ran: false
// when the decision came only now, so that create was refused.
func (s *Store) decide(ctx context.Context, c *admitCall) (admittedInPipeline bool, err error) {
	adm := c.adm
	if c.answerErr != nil {
		// The script did not run (not loaded, NOSCRIPT): nothing was
		// taken. Apply the limits now, as Admit does.
		d, slot, err := s.Admit(ctx, adm.Agent, c.slot.id, adm.Rate, adm.MaxOpen, adm.Lease)
		if err != nil {
			return false, err
		}
		adm.Decided, adm.Decision, adm.Slot = true, d, slot
		return false, nil
	}
	res := c.answer
	d := RateDecision{Allowed: true}
	if !c.rateOff {
		if len(res) < 3 {
			return false, fmt.Errorf("store: apply the intake limits of %s: unexpected answer %v", adm.Agent, res)
		}
		num := func(v any) int64 { n, _ := v.(int64); return n }
		d = RateDecision{Allowed: num(res[0]) == 1, Remaining: num(res[1]), Wait: time.Duration(num(res[2])) * time.Millisecond}
		res = res[3:]
	}
	adm.Decided, adm.Decision = true, d
	if !d.Allowed {
		return false, nil
	}
	slot, done, err := s.reserved(ctx, c.slot, c.now, res)
	if err != nil {
		adm.Decided = false
		return false, err
	}
	if done {
		adm.Slot = slot
		return slot.Allowed(), nil
	}
	// Seeded or reconciled: reserve again (the token is taken already).
	slot, err = s.ReserveOpen(ctx, adm.Agent, c.slot.id, adm.MaxOpen, adm.Lease)
	if err != nil {
		adm.Decided = false
		return false, err
	}
	adm.Slot = slot
	return false, nil
}

// admitThenCreate is Create under an Admission on a Redis Cluster, where
// the agent's limits are on another node than the request: Admit, then
// the create under the reservation's write deadline.
func (s *Store) admitThenCreate(ctx context.Context, adm *Admission, n NewRequest) (Record, bool, error) {
	d, slot, err := s.Admit(ctx, adm.Agent, n.ID, adm.Rate, adm.MaxOpen, adm.Lease)
	if err != nil {
		return Record{}, false, err
	}
	adm.Decided, adm.Decision, adm.Slot = true, d, slot
	ctx = context.WithValue(ctx, admissionKey{}, (*Admission)(nil))
	if !d.Allowed || !slot.Allowed() {
		// Refused: a resubmission of the stored request is answered all
		// the same, as on one node (StoredOnly stores nothing new).
		rec, created, err := s.Create(StoredOnly(ctx), n)
		if errors.Is(err, ErrNotFound) || errors.Is(err, ErrConflict) {
			err = ErrNotAdmitted
		}
		return rec, created, err
	}
	return s.Create(WriteBy(ctx, slot.CreateBy), n)
}

package store

import (
	"context"
	"errors"
	"time"
)

// Admission is an agent's intake limits, applied by Create itself when ctx
// carries it (AdmitOnCreate): on one Redis node by the create's own script
// (createAndQueue), the create admitted only if they reserved the request
// a slot; on a Cluster, whose limits are on another node, by Admit just
// before.
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

// settleAdmission reads the answer of the limits, which the create's
// script applied before its guards (createAndQueue), into c's Admission,
// and returns the create's outcome createErr, or the admission's failure.
// A decision that needed more than the script (a count seeded or
// reconciled first) was refused by the create's guard: it is finished now
// and stands as ErrNotAdmitted with the slot now reserved.
func (s *Store) settleAdmission(ctx context.Context, c admitCall, answer []any, createErr error) error {
	adm := c.adm
	var err error
	adm.Decision, adm.Slot, err = s.admitted(ctx, c, answer)
	if err != nil && createErr == nil {
		// Created, so the limits admitted it, and the create's script
		// confirmed its slot: nothing to settle.
		adm.Decided, adm.Decision, adm.Slot = true, RateDecision{Allowed: true}, OpenSlot{}
		return nil
	}
	if err != nil {
		return err
	}
	adm.Decided = true
	return createErr
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
	// Under the reservation's deadline, or the caller's own if that is
	// sooner: a deadline the caller gave is never pushed back.
	by := slot.CreateBy
	if at, ok := ctx.Value(writeByKey{}).(time.Time); ok && at.Before(by) {
		by = at
	}
	return s.Create(WriteBy(ctx, by), n)
}

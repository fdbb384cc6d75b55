package store

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/approvalbot/approvalbot/aah"
	"github.com/redis/go-redis/v9"
)

// The cap on an agent's open requests (INTAKE_MAX_OPEN) is enforced by a
// count kept in Redis, <p>:open:{<agent>} (keys.go), whose members are
// request ids, so that every replica takes from the same count atomically:
//
//  1. ReserveOpen adds the request as a reservation (score: its deadline)
//     only while the agent has fewer members than its cap (reserveOpen,
//     one script, so concurrent intakes on any replica cannot all squeeze
//     in); store.Admit does it in the same script as the rate. The create
//     then runs under WriteBy(OpenSlot.CreateBy), a deadline its script
//     checks against Redis's own clock, well before the reservation's.
//     On one Redis node, where Create applies the limits in its own script
//     (AdmitOnCreate, createAndQueue), the reservation is written only if
//     a guard stops the create: the member is written once, confirmed as
//     the create commits, Held or Reserved (the request exists from then
//     on), and the caller has nothing left to confirm; no deadline is
//     needed, nothing coming between the slot and the create.
//  2. ConfirmOpen (or ConfirmOpenLater, off intake's path) makes it a
//     confirmed member once the create committed (on one node, done);
//     SettleOpen confirms or releases it when the create did not create
//     (a resubmission, a conflict, a refusal). A request already counted
//     takes no slot (Held): its member becomes this intake's reservation,
//     confirmed by a reconcile once past its deadline if the request is
//     open, so that a member that outlived a deleted request, whose id is
//     now stored again, is not removed by a reconcile that read it missing.
//  3. Update removes the member after the transaction that closed the
//     request committed (Options.OpenCounts).
//
// Every open request is therefore a member, so an agent never has more open
// than its cap. The count errs the other way only: a member whose request
// closed without its removal (a process died in between, or a confirmation
// raced a close) or a reservation whose intake died. Members are not
// expired blindly: at the cap, at most once per OpenReconcileEvery per
// agent, reconcile reads every member's request (pipelined across shards)
// and removes those closed or missing, and confirms a reservation past its
// deadline whose request exists and is open (its intake died after the
// create). A reservation before its deadline is left alone, since its
// create may still commit. So a refusal the truth would not make lasts at
// most until the reservation's deadline, plus OpenReconcileEvery.
//
// Counts kept before this existed are seeded (seedOpen) from the agent's
// per-status indexes the first time, and again every OpenReseedEvery, which
// also catches requests created while the count was not kept (the agent's
// cap was 0, or an older replica accepted them).

// openConfirmed is the least score of a confirmed member, above any
// reservation deadline (Unix ms). A member is confirmed with openConfirmed
// plus the time it is confirmed (confirmedScore), so that a member
// confirmed again never gets back a score it had before, which a reconcile
// may have read (it removes a member only if its score is still the one it
// read). A create that confirms its own slot (on one node, in its script)
// uses its reservation's deadline instead (Create says why). Such scores stay exact in a double (below 2^53) for ages; members
// confirmed by earlier versions have 2^53, confirmed too.
const openConfirmed = 1 << 52

var openConfirmedArg = strconv.FormatInt(openConfirmed, 10)

// confirmedScore is the score of a member confirmed at ms.
func confirmedScore(ms int64) string { return strconv.FormatInt(openConfirmed+ms, 10) }

// OpenReconcileEvery is the least time between two reconciles of one
// agent's count, so an agent flooding intake at its cap costs one read of
// its members per period, not one per refusal.
const OpenReconcileEvery = 2 * time.Second

// OpenReseedEvery is how long a count seeded from the agent indexes is
// trusted before they are read again.
const OpenReseedEvery = 10 * time.Minute

// OpenSlot is ReserveOpen's answer.
type OpenSlot struct {
	// Reserved: a slot was taken for this request. The caller confirms it
	// once the create committed (ConfirmOpen), or settles it (SettleOpen).
	Reserved bool
	// Held: the request is counted already (it is open, or another intake
	// of it is creating it); it took no other slot.
	Held bool
	// Open is the agent's count: with this request when Reserved or Held,
	// otherwise (refused) the count at the cap.
	Open int64
	// CreateBy is the time the create must commit by, to be covered by the
	// reservation: pass it to WriteBy.
	CreateBy time.Time

	agent, id string
	score     int64 // the reservation's deadline, as stored
	// confirmed: the create confirmed it as it committed (on one Redis
	// node, Create under an Admission: createAndQueue).
	confirmed bool
}

// Allowed reports whether the request may be created.
func (o OpenSlot) Allowed() bool { return o.Reserved || o.Held }

// ReserveOpen takes one of agent's max open-request slots for request id,
// shared with every process (see the top of this file). lease bounds how
// long a reservation outlives an intake that died before confirming it:
// the create must commit by half of it (CreateBy), which leaves the other
// half for the clocks of the processes to disagree.
func (s *Store) ReserveOpen(ctx context.Context, agent, id string, max int, lease time.Duration) (OpenSlot, error) {
	if max <= 0 {
		return OpenSlot{}, errors.New("store: reserve an open request slot: the cap must be 1 or more")
	}
	count, meta := s.keys.openCount(agent), s.keys.openMeta(agent)
	for range 4 {
		now := s.nowMs()
		slot := OpenSlot{agent: agent, id: id, score: now + lease.Milliseconds(), CreateBy: time.Now().Add(lease / 2)}
		res, err := reserveOpen.Run(ctx, s.rdb, []string{count, meta}, now, slot.score, max, id).Slice()
		if err != nil {
			return OpenSlot{}, fmt.Errorf("store: reserve an open request slot of %s: %w", agent, err)
		}
		if slot, done, err := s.reserved(ctx, slot, now, res); done || err != nil {
			return slot, err
		}
	}
	return OpenSlot{}, fmt.Errorf("store: reserve an open request slot of %s: the count kept changing", agent)
}

// reserved reads reserveOpen's answer res for slot (taken at now). done is
// false when the script must run again: the count was seeded, or members
// were reconciled away, meanwhile.
func (s *Store) reserved(ctx context.Context, slot OpenSlot, now int64, res []any) (_ OpenSlot, done bool, _ error) {
	if len(res) < 2 {
		return OpenSlot{}, true, fmt.Errorf("store: reserve an open request slot of %s: unexpected answer %v", slot.agent, res)
	}
	code, _ := res[0].(int64)
	slot.Open, _ = res[1].(int64)
	switch code {
	case 1:
		slot.Reserved = true
		return slot, true, nil
	case 2:
		slot.Held = true
		return slot, true, nil
	case 0:
		return slot, true, nil
	case 3:
		return OpenSlot{}, false, s.seedOpen(ctx, slot.agent)
	case 4:
		removed, err := s.reconcileOpen(ctx, slot.agent, now, res[2:])
		if err != nil {
			return OpenSlot{}, true, err
		}
		return slot, removed == 0, nil // none removed: the count is the truth, refused
	}
	return OpenSlot{}, true, fmt.Errorf("store: reserve an open request slot of %s: unexpected answer %v", slot.agent, res)
}

// ConfirmOpen makes the request of slot a confirmed member of its agent's
// count, once its create committed (or a resubmission found it open). It
// adds the member if it is missing: counting an open request is never
// wrong, and if it closed meanwhile reconcile removes it.
//
// A Held slot is not confirmed: reserveOpen made its member a reservation
// of this intake (a confirmed member may have outlived a request deleted
// since, and this create made a new one), which a reconcile confirms once
// past its deadline if the request is open. Confirming it here would give
// it back the score a reconcile may have read before the create, when the
// request was missing, and that reconcile would then remove it.
func (s *Store) ConfirmOpen(ctx context.Context, slot OpenSlot) error {
	if !slot.Reserved || slot.confirmed {
		return nil
	}
	if err := s.rdb.ZAdd(ctx, s.keys.openCount(slot.agent), redis.Z{Score: float64(openConfirmed + s.nowMs()), Member: slot.id}).Err(); err != nil {
		return fmt.Errorf("store: confirm the open request %s of %s: %w", slot.id, slot.agent, err)
	}
	return nil
}

// ConfirmOpenLater is ConfirmOpen off the caller's path: confirmations
// queue for a writer that sends what has queued in one pipeline (under
// load, one round trip confirms many). A confirmation lost (a crash, Redis
// failing) changes nothing the count says: an unconfirmed reservation
// counts until reconcile looks at its request and confirms it.
func (s *Store) ConfirmOpenLater(slot OpenSlot) {
	if slot.Reserved && !slot.confirmed {
		s.confirms.add(slot, s.confirmBatch)
	}
}

// confirmBatch writes queued confirmations in one pipeline; a failure leaves
// them to reconcile (above). It returns how many failed.
func (s *Store) confirmBatch(ctx context.Context, batch []OpenSlot) (failed int) {
	pipe := s.rdb.Pipeline()
	score := float64(openConfirmed + s.nowMs())
	for _, sl := range batch {
		pipe.ZAdd(ctx, s.keys.openCount(sl.agent), redis.Z{Score: score, Member: sl.id})
	}
	cmds, _ := pipe.Exec(ctx) // each command's error is read below
	return countFailed(cmds)
}

// SettleOpen decides a slot whose create did not create the request, and
// did fail for certain (not a timeout, after which the create may have
// committed: leave the reservation then, reconcile decides it once past
// its deadline). A request by that id that is open and the agent's keeps
// (or gets) its member; otherwise this intake's reservation is released,
// unless another intake of the same request renewed it meanwhile.
func (s *Store) SettleOpen(ctx context.Context, slot OpenSlot) error {
	if !slot.Allowed() {
		return nil
	}
	rec, err := s.Get(ctx, slot.id)
	switch {
	case err == nil && rec.Status.Open() && rec.Agent == slot.agent:
		return s.ConfirmOpen(ctx, slot)
	case err != nil && !errors.Is(err, ErrNotFound):
		return fmt.Errorf("store: settle the open request slot %s of %s: %w", slot.id, slot.agent, err)
	case !slot.Reserved:
		return nil // another intake's reservation, or a stale member: not this one's to drop
	}
	err = settleOpen.Run(ctx, s.rdb, []string{s.keys.openCount(slot.agent)}, confirmedScore(s.nowMs()), slot.id, slot.score, "r").Err()
	if err != nil {
		return fmt.Errorf("store: release the open request slot %s of %s: %w", slot.id, slot.agent, err)
	}
	return nil
}

// forgetOpen removes a request that just closed from its agent's count.
func (s *Store) forgetOpen(ctx context.Context, agent, id string) error {
	return s.rdb.ZRem(ctx, s.keys.openCount(agent), id).Err()
}

// reconcileOpen settles the members of agent's count that may not be open
// requests (pairs of id, score as reserveOpen returned them): confirmed
// members and reservations past their deadline. Their requests are read in
// one pipeline; each closed, missing or foreign one is removed, and a
// reservation whose request is open is confirmed, each only if its score is
// still the one read. It returns how many were removed.
func (s *Store) reconcileOpen(ctx context.Context, agent string, now int64, pairs []any) (int64, error) {
	type member struct {
		id, score string
		cmd       *redis.SliceCmd
	}
	var check []member
	for i := 0; i+1 < len(pairs); i += 2 {
		id, _ := pairs[i].(string)
		score, _ := pairs[i+1].(string)
		v, err := strconv.ParseFloat(score, 64)
		if err != nil {
			return 0, fmt.Errorf("store: reconcile the open requests of %s: score %q of %s: %w", agent, score, id, err)
		}
		if v > float64(now) && v < openConfirmed {
			continue // a reservation before its deadline: its create may still commit
		}
		check = append(check, member{id: id, score: score})
	}
	if len(check) == 0 {
		return 0, nil
	}
	_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i := range check {
			if aah.ValidRequestID(check[i].id) {
				check[i].cmd = p.HMGet(ctx, s.keys.request(check[i].id), "status", "agent")
			}
		}
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return 0, fmt.Errorf("store: reconcile the open requests of %s: read their statuses: %w", agent, err)
	}
	args := []any{confirmedScore(s.nowMs())}
	for _, m := range check {
		var status, owner string
		if m.cmd != nil {
			vals := m.cmd.Val()
			if len(vals) == 2 {
				status, _ = vals[0].(string)
				owner, _ = vals[1].(string)
			}
		}
		v, _ := strconv.ParseFloat(m.score, 64)
		switch {
		case owner == agent && aah.Status(status).Open():
			if v < openConfirmed {
				args = append(args, m.id, m.score, "c")
			}
		default:
			args = append(args, m.id, m.score, "r")
		}
	}
	if len(args) == 1 {
		return 0, nil
	}
	removed, err := settleOpen.Run(ctx, s.rdb, []string{s.keys.openCount(agent)}, args...).Int64()
	if err != nil {
		return 0, fmt.Errorf("store: reconcile the open requests of %s: %w", agent, err)
	}
	return removed, nil
}

// seedOpen adds agent's open requests, as its per-status indexes in every
// shard list them (one pipeline), to its count.
func (s *Store) seedOpen(ctx context.Context, agent string) error {
	var cmds []*redis.StringSliceCmd
	_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for shard := range Shards {
			for _, st := range aah.Statuses {
				if st.Open() {
					cmds = append(cmds, p.ZRange(ctx, s.keys.agentIndex(shard, agent, st), 0, -1))
				}
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("store: seed the open requests of %s: %w", agent, err)
	}
	args := []any{s.nowMs() + OpenReseedEvery.Milliseconds(), confirmedScore(s.nowMs())}
	for _, c := range cmds {
		for _, id := range c.Val() {
			args = append(args, id)
		}
	}
	if err := seedOpen.Run(ctx, s.rdb, []string{s.keys.openCount(agent), s.keys.openMeta(agent)}, args...).Err(); err != nil {
		return fmt.Errorf("store: seed the open requests of %s: %w", agent, err)
	}
	return nil
}

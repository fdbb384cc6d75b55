package store

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// admitIntake is takeToken and then, when a token was taken and a cap is
// set, reserveOpen: an agent's two intake limits in one round trip (their
// keys share the agent's hash tag). The two scripts' own text is run, its
// KEYS and ARGV shifted, so the three cannot drift apart.
//
//	KEYS[1]    -> <p>:bucket:{<agent>}
//	KEYS[2..3] -> reserveOpen's KEYS[1..2]
//	ARGV[1..4] -> takeToken's ARGV
//	ARGV[5]    -> "1" to reserve a slot when the token was taken, "0" not
//	ARGV[6..9] -> reserveOpen's ARGV
//
// Returns takeToken's answer followed, when a slot was asked for and the
// token taken, by reserveOpen's.
var admitIntake = redis.NewScript(holdReservation + admitIntakeSrc)

// admitIntakeSrc is admitIntake's text but for the function hold
// (reserveOpen's), which createAndQueue defines otherwise.
var admitIntakeSrc = `
local function take()
` + takeTokenSrc + `
end
local function reserve()
` + shiftScript(reserveOpenSrc, 1, 5) + `
end
local out = take()
if out[1] == 1 and ARGV[5] == '1' then
  for _, v in ipairs(reserve()) do out[#out + 1] = v end
end
return out
`

var scriptRef = regexp.MustCompile(`(KEYS|ARGV)\[(\d+)\]`)

// shiftScript renumbers a script's KEYS[i] to KEYS[i+keys] and ARGV[i] to
// ARGV[i+args].
func shiftScript(src string, keys, args int) string {
	return scriptRef.ReplaceAllStringFunc(src, func(ref string) string {
		m := scriptRef.FindStringSubmatch(ref)
		n, _ := strconv.Atoi(m[2])
		if m[1] == "KEYS" {
			n += keys
		} else {
			n += args
		}
		return m[1] + "[" + strconv.Itoa(n) + "]"
	})
}

// Admit applies agent's intake limits to a new request id, as
// TakeIntakeToken and then (when it allowed it and maxOpen > 0) ReserveOpen
// do, in one round trip. slot is the zero OpenSlot when no slot was asked
// for or the rate refused. A count that must be seeded or reconciled
// first (rare) is finished by ReserveOpen.
func (s *Store) Admit(ctx context.Context, agent, id string, rate Rate, maxOpen int, lease time.Duration) (RateDecision, OpenSlot, error) {
	if maxOpen <= 0 {
		d, err := s.TakeIntakeToken(ctx, agent, rate)
		return d, OpenSlot{}, err
	}
	if rate.Off() {
		slot, err := s.ReserveOpen(ctx, agent, id, maxOpen, lease)
		return RateDecision{Allowed: true}, slot, err
	}
	c := s.admitCallFor(&Admission{Agent: agent, Rate: rate, MaxOpen: maxOpen, Lease: lease}, id)
	res, err := c.script.Run(ctx, s.rdb, c.keys, c.args...).Slice()
	if err != nil {
		return RateDecision{}, OpenSlot{}, fmt.Errorf("store: apply the intake limits of %s: %w", agent, err)
	}
	return s.admitted(ctx, c, res)
}

// admitCall is the script call that applies an Admission's limits to one
// request: admitIntake, or reserveOpen alone when the rate is off.
type admitCall struct {
	adm          *Admission
	script       *redis.Script
	keys         []string
	args         []any
	now          int64
	slot         OpenSlot // the reservation it asks for
	reserveFirst bool     // reserveOpen alone: its answer has no rate part
}

// admitCallFor is adm's call for request id (adm.MaxOpen must be 1 or more).
func (s *Store) admitCallFor(adm *Admission, id string) admitCall {
	now := s.nowMs()
	slot := OpenSlot{agent: adm.Agent, id: id, score: now + adm.Lease.Milliseconds(), CreateBy: time.Now().Add(adm.Lease / 2)}
	c := admitCall{adm: adm, now: now, slot: slot}
	reserve := []any{now, slot.score, adm.MaxOpen, id}
	if adm.Rate.Off() {
		c.script, c.reserveFirst = reserveOpen, true
		c.keys = []string{s.keys.openCount(adm.Agent), s.keys.openMeta(adm.Agent)}
		c.args = reserve
		return c
	}
	per := max(adm.Rate.Per.Milliseconds(), 1)
	c.script = admitIntake
	c.keys = []string{s.keys.rate(adm.Agent), s.keys.openCount(adm.Agent), s.keys.openMeta(adm.Agent)}
	c.args = append([]any{now, per, adm.Rate.Count, adm.Rate.Burst, "1"}, reserve...)
	return c
}

// admitted reads c's answer res, finishing what the script could not do:
// a count to seed or members to reconcile first, after which the slot is
// reserved again (the token is taken already).
func (s *Store) admitted(ctx context.Context, c admitCall, res []any) (RateDecision, OpenSlot, error) {
	agent := c.adm.Agent
	d := RateDecision{Allowed: true}
	if !c.reserveFirst {
		if len(res) < 3 {
			return RateDecision{}, OpenSlot{}, fmt.Errorf("store: apply the intake limits of %s: unexpected answer %v", agent, res)
		}
		num := func(v any) int64 { n, _ := v.(int64); return n }
		d = RateDecision{Allowed: num(res[0]) == 1, Remaining: num(res[1]), Wait: time.Duration(num(res[2])) * time.Millisecond}
		res = res[3:]
	}
	if !d.Allowed {
		return d, OpenSlot{}, nil
	}
	slot, done, err := s.reserved(ctx, c.slot, c.now, res)
	if err != nil || done {
		return d, slot, err
	}
	slot, err = s.ReserveOpen(ctx, agent, c.slot.id, c.adm.MaxOpen, c.adm.Lease)
	return d, slot, err
}

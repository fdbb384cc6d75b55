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
//	KEYS[1]    -> <p>:rate:{<agent>}
//	KEYS[2..3] -> reserveOpen's KEYS[1..2]
//	ARGV[1..4] -> takeToken's ARGV
//	ARGV[5]    -> "1" to reserve a slot when the token was taken, "0" not
//	ARGV[6..11] -> reserveOpen's ARGV
//
// Returns takeToken's answer followed, when a slot was asked for and the
// token taken, by reserveOpen's.
var admitIntake = redis.NewScript(`
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
`)

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
	if rate.Off() {
		if maxOpen <= 0 {
			return RateDecision{Allowed: true}, OpenSlot{}, nil
		}
		slot, err := s.ReserveOpen(ctx, agent, id, maxOpen, lease)
		return RateDecision{Allowed: true}, slot, err
	}
	if maxOpen <= 0 {
		d, err := s.TakeIntakeToken(ctx, agent, rate)
		return d, OpenSlot{}, err
	}
	now := s.nowMs()
	slot := OpenSlot{agent: agent, id: id, score: now + lease.Milliseconds(), CreateBy: time.Now().Add(lease / 2)}
	per := max(rate.Per.Milliseconds(), 1)
	res, err := admitIntake.Run(ctx, s.rdb, []string{s.keys.rate(agent), s.keys.openCount(agent), s.keys.openMeta(agent)},
		now, per, rate.Count, rate.Burst, "1",
		now, slot.score, maxOpen, id, OpenReconcileEvery.Milliseconds(), openConfirmedArg).Slice()
	if err != nil {
		return RateDecision{}, OpenSlot{}, fmt.Errorf("store: apply the intake limits of %s: %w", agent, err)
	}
	if len(res) < 3 {
		return RateDecision{}, OpenSlot{}, fmt.Errorf("store: apply the intake limits of %s: unexpected answer %v", agent, res)
	}
	num := func(v any) int64 { n, _ := v.(int64); return n }
	d := RateDecision{Allowed: num(res[0]) == 1, Remaining: num(res[1]), Wait: time.Duration(num(res[2])) * time.Millisecond}
	if !d.Allowed {
		return d, OpenSlot{}, nil
	}
	slot, done, err := s.reserved(ctx, slot, now, res[3:])
	if err != nil || done {
		return d, slot, err
	}
	slot, err = s.ReserveOpen(ctx, agent, id, maxOpen, lease)
	return d, slot, err
}

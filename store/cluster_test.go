package store_test

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/approvalbot/approvalbot/store"
	"github.com/approvalbot/approvalbot/store/redistest"
	"github.com/redis/go-redis/v9"
)

// hashTag is the part of key Redis Cluster hashes: the text between the first
// "{" and the next "}" when that is not empty, else the whole key.
func hashTag(key string) string {
	if i := strings.IndexByte(key, '{'); i >= 0 {
		if j := strings.IndexByte(key[i+1:], '}'); j > 0 {
			return key[i+1 : i+1+j]
		}
	}
	return key
}

// slotHook checks every script call a client makes: all of its KEYS must
// hash the same (one Cluster slot). It records rather than fails, so it can
// be shared by parallel tests and checked once at the end.
type slotHook struct {
	mu         sync.Mutex
	calls      map[string]int // script sha1 -> calls
	txs        int            // MULTI/EXEC transactions checked
	violations []string
}

func newSlotHook() *slotHook { return &slotHook{calls: map[string]int{}} }

func (h *slotHook) DialHook(next redis.DialHook) redis.DialHook { return next }

// Calls the store makes on one Redis node only (store.OneNodeOnly: a
// create's limits, write and post queuing in one pipeline) are counted,
// not checked: a Cluster never sees them, and the suite's Cluster run
// would fail with CROSSSLOT if it did.
func (h *slotHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		h.inspect(cmd, store.OneNodeOnly(ctx))
		return next(ctx, cmd)
	}
}

func (h *slotHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		for _, c := range cmds {
			h.inspect(c, store.OneNodeOnly(ctx))
		}
		h.inspectTx(cmds)
		return next(ctx, cmds)
	}
}

func (h *slotHook) inspect(cmd redis.Cmder, oneNode bool) {
	args := cmd.Args()
	if len(args) == 0 {
		return
	}
	name := strings.ToLower(fmt.Sprint(args[0]))
	var script string
	switch name {
	case "eval", "eval_ro":
		sum := sha1.Sum([]byte(fmt.Sprint(args[1])))
		script = hex.EncodeToString(sum[:])
	case "evalsha", "evalsha_ro":
		script = strings.ToLower(fmt.Sprint(args[1]))
	default:
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.calls[script]++
	n, err := strconv.Atoi(fmt.Sprint(args[2]))
	if err != nil || n < 0 || 3+n > len(args) {
		h.violations = append(h.violations, fmt.Sprintf("%s %s: bad numkeys %v", name, script, args[2]))
		return
	}
	if n == 0 {
		h.violations = append(h.violations, fmt.Sprintf("%s %s: no KEYS (cannot be routed to a slot)", name, script))
		return
	}
	if oneNode {
		return
	}
	keys := make([]string, n)
	for i := range n {
		keys[i] = fmt.Sprint(args[3+i])
	}
	for _, k := range keys[1:] {
		if hashTag(k) != hashTag(keys[0]) {
			h.violations = append(h.violations, fmt.Sprintf("%s %s: KEYS span slots: %q", name, script, keys))
			return
		}
	}
}

// inspectTx checks a MULTI/EXEC transaction: every command's key (its first
// argument) must hash to one slot, or Cluster refuses the transaction.
func (h *slotHook) inspectTx(cmds []redis.Cmder) {
	if len(cmds) == 0 || strings.ToLower(fmt.Sprint(cmds[0].Args()[0])) != "multi" {
		return
	}
	var keys []string
	for _, c := range cmds {
		args := c.Args()
		switch strings.ToLower(fmt.Sprint(args[0])) {
		case "multi", "exec":
			continue
		}
		if len(args) > 1 {
			keys = append(keys, fmt.Sprint(args[1]))
		}
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.txs++
	for _, k := range keys {
		if hashTag(k) != hashTag(keys[0]) {
			h.violations = append(h.violations, fmt.Sprintf("MULTI/EXEC spans slots: %q", keys))
			return
		}
	}
}

func (h *slotHook) result() (calls map[string]int, violations []string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return maps.Clone(h.calls), slices.Clone(h.violations)
}

func TestHashTag(t *testing.T) {
	t.Parallel()
	for key, want := range map[string]string{
		"ab:{s03}:req:x":         "s03",
		"ab:{s03}:idx:agent:a}b": "s03",
		"ab:pace:C1":             "ab:pace:C1",
		"ab:{}:x":                "ab:{}:x",
		"a{b":                    "a{b",
		"{x}{y}":                 "x",
	} {
		if got := hashTag(key); got != want {
			t.Errorf("hashTag(%q) = %q; want %q", key, got, want)
		}
	}
}

// The hook itself must catch a cross-slot script, or the property test below
// proves nothing.
func TestSlotHookCatchesCrossSlotScripts(t *testing.T) {
	t.Parallel()
	rdb, prefix := redistest.Client(t)
	h := newSlotHook()
	addHooks(rdb, h)
	ctx := testCtx(t)
	// check fails the test on an error, except that on a real Cluster a
	// cross-slot call must fail with CROSSSLOT: there the server confirms
	// what the hook found (the hook sees the call before it is sent).
	check := func(err error, crossSlot bool) {
		t.Helper()
		if crossSlot && redistest.Cluster() {
			if err == nil || !strings.Contains(err.Error(), "CROSSSLOT") {
				t.Fatalf("cross-slot call on Cluster: err = %v; want CROSSSLOT", err)
			}
			return
		}
		if err != nil {
			t.Fatalf("EVAL: %v", err)
		}
	}
	run := func(crossSlot bool, keys ...string) {
		t.Helper()
		check(rdb.Eval(ctx, "return 1", keys).Err(), crossSlot)
	}
	run(false, prefix+":{a}:x", prefix+":{a}:y")
	run(false, prefix+":single")
	if _, v := h.result(); len(v) != 0 {
		t.Fatalf("violations for same-slot keys: %q", v)
	}
	run(true, prefix+":{a}:x", prefix+":{b}:y")
	run(true, prefix+":{}:x", prefix+":{}:y")
	check(redis.NewScript("return 1").Run(ctx, rdb, []string{prefix + ":{s01}:a", prefix + ":{s02}:b"}).Err(), true)
	calls, v := h.result()
	if len(v) != 3 {
		t.Errorf("violations = %q; want 3 (cross-tag EVAL, empty-tag EVAL, cross-tag EVALSHA/EVAL)", v)
	}
	if len(calls) != 1 {
		t.Errorf("distinct scripts seen = %d; want 1", len(calls))
	}
}

// TestScriptKeysShareOneSlot runs the whole suite (and the pacing tests)
// through a hook that checks every EVAL/EVALSHA: all KEYS of one call must
// share one hash slot, as Redis Cluster requires.
func TestScriptKeysShareOneSlot(t *testing.T) {
	t.Parallel()
	h := newSlotHook()
	t.Cleanup(func() { // after every (parallel) subtest
		calls, violations := h.result()
		for i, v := range violations {
			if i == 10 {
				t.Errorf("... and %d more cross-slot script calls", len(violations)-i)
				break
			}
			t.Errorf("cross-slot script call: %s", v)
		}
		total := 0
		for _, n := range calls {
			total += n
		}
		h.mu.Lock()
		txs := h.txs
		h.mu.Unlock()
		t.Logf("checked %d script calls of %d distinct scripts and %d transactions", total, len(calls), txs)
		// claimJobs, ackJob, retryJob, buryJob, takePostTurn, holdPace, setFields,
		// reserveOpen, settleOpen, seedOpen, and retention's scheduleOnce,
		// deleteRetained, trimChain, markExported, setFence.
		if len(calls) < 15 {
			t.Errorf("only %d distinct scripts ran through the hook; want all 15", len(calls))
		}
		if txs == 0 {
			t.Error("no MULTI/EXEC transaction ran through the hook")
		}
	})
	b := realRedis(h)
	t.Run("suite", func(t *testing.T) {
		t.Parallel()
		testSuite(t, b)
	})
	t.Run("pace", func(t *testing.T) {
		t.Parallel()
		testPostTurns(t, b)
	})
	t.Run("opencap", func(t *testing.T) {
		t.Parallel()
		testOpenCap(t, b)
	})
	t.Run("grants", func(t *testing.T) {
		t.Parallel()
		testGrants(t, b)
	})
	t.Run("retention", func(t *testing.T) {
		t.Parallel()
		testRetentionSweep(t, rawBackends(h)["redis"](t, "ret-key"))
	})
	t.Run("retention job", func(t *testing.T) {
		t.Parallel()
		testRetentionJobAndState(t, rawBackends(h)["redis"](t, ""))
	})
}

package webhook_test

import (
	"context"
	"fmt"
	"hash/crc32"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/approvalbot/approvalbot/store"
	"github.com/approvalbot/approvalbot/webhook"
	"github.com/redis/go-redis/v9"
)

// afterHook runs fn once, right after the first command named name on key
// has been answered.
type afterHook struct {
	mu        sync.Mutex
	name, key string
	fn        func(ctx context.Context)
}

func (h *afterHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *afterHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		h.after(ctx, cmd)
		return err
	}
}

// The store reads a request's hash alone or in a pipeline with its
// document: the hook runs after either.
func (h *afterHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		err := next(ctx, cmds)
		for _, cmd := range cmds {
			h.after(ctx, cmd)
		}
		return err
	}
}

// after runs fn once, after the command named name on key.
func (h *afterHook) after(ctx context.Context, cmd redis.Cmder) {
	h.mu.Lock()
	fn := h.fn
	if a := cmd.Args(); fn != nil && cmd.Name() == h.name && len(a) > 1 && a[1] == h.key {
		h.fn = nil
	} else {
		fn = nil
	}
	h.mu.Unlock()
	if fn != nil {
		fn(ctx)
	}
}

// A resubmission is let past the limits because the agent stored that very
// request: if the retention sweep deletes it between that look-up and the
// create, the create must not store it anew outside the limits (a new open
// request beyond them, counted nowhere). The limits apply to it again.
//
// The look-up is made when the limits were applied before the create: with
// a rate and no cap on open requests. (Under a cap the create applies the
// limits itself, in its script, after it found the request stored or not:
// there is no look-up to race: TestIntakeOpenCap.)
func TestIntakeResubmissionDeletedMeanwhileIsLimited(t *testing.T) {
	t.Parallel()
	a, _, _ := limitedAPI(t, webhook.Limits{Rate: store.Rate{Count: 1, Per: time.Hour, Burst: 1}})
	if r, _ := a.post(tokenPM, seedWith(t, "old", nil)); r.Status != http.StatusAccepted {
		t.Fatalf("POST old: %d %s", r.Status, r.Body)
	}
	if r := a.do(http.MethodDelete, "/v1/requests/old", tokenPM); r.Status != http.StatusOK {
		t.Fatalf("withdraw: %d %s", r.Status, r.Body)
	}
	slot := fmt.Sprintf("%s:{s%02d}", a.prefix, crc32.ChecksumIEEE([]byte("old"))%store.Shards)
	hook := &afterHook{name: "hgetall", key: slot + ":req:old"}
	a.rdb.AddHook(hook)
	hook.mu.Lock()
	hook.fn = func(ctx context.Context) { // the sweep, as far as Create can tell
		a.rdb.Del(ctx, slot+":req:old", slot+":audit:old")
	}
	hook.mu.Unlock()
	r, _ := a.post(tokenPM, seedWith(t, "old", nil))
	if r.Status != http.StatusTooManyRequests {
		t.Errorf("resubmission of a request deleted meanwhile, past the rate: %d %s, want 429", r.Status, r.Body)
	}
	if _, err := a.st.Get(t.Context(), "old"); err == nil {
		t.Error("the request was stored again beyond the agent's rate")
	}
}

// GET /v1/requests/{id}/audit of a request the retention sweep deletes
// while the handler runs answers 404, as once it is gone, not 500.
func TestAuditOfARequestDeletedMeanwhile(t *testing.T) {
	t.Parallel()
	a, _, _ := limitedAPI(t, webhook.Limits{})
	if r, _ := a.post(tokenPM, seedWith(t, "audited", nil)); r.Status != http.StatusAccepted {
		t.Fatalf("POST: %d %s", r.Status, r.Body)
	}
	slot := fmt.Sprintf("%s:{s%02d}", a.prefix, crc32.ChecksumIEEE([]byte("audited"))%store.Shards)
	hook := &afterHook{name: "hgetall", key: slot + ":req:audited"}
	a.rdb.AddHook(hook)
	hook.mu.Lock()
	hook.fn = func(ctx context.Context) { a.rdb.Del(ctx, slot+":req:audited", slot+":audit:audited") }
	hook.mu.Unlock()
	if r := a.do(http.MethodGet, "/v1/requests/audited/audit", tokenPM); r.Status != http.StatusNotFound {
		t.Errorf("GET audit of a request deleted meanwhile: %d %s, want 404", r.Status, r.Body)
	}
}

// DELETE /v1/requests/{id} of a closed request the retention sweep deletes
// while the handler runs answers 404, as once it is gone, not 500.
func TestWithdrawOfARequestDeletedMeanwhile(t *testing.T) {
	t.Parallel()
	a, _, _ := limitedAPI(t, webhook.Limits{})
	if r, _ := a.post(tokenPM, seedWith(t, "gone", nil)); r.Status != http.StatusAccepted {
		t.Fatalf("POST: %d %s", r.Status, r.Body)
	}
	if r := a.do(http.MethodDelete, "/v1/requests/gone", tokenPM); r.Status != http.StatusOK {
		t.Fatalf("withdraw: %d %s", r.Status, r.Body)
	}
	slot := fmt.Sprintf("%s:{s%02d}", a.prefix, crc32.ChecksumIEEE([]byte("gone"))%store.Shards)
	hook := &afterHook{name: "hgetall", key: slot + ":req:gone"}
	a.rdb.AddHook(hook)
	hook.mu.Lock()
	hook.fn = func(ctx context.Context) { a.rdb.Del(ctx, slot+":req:gone", slot+":audit:gone") }
	hook.mu.Unlock()
	if r := a.do(http.MethodDelete, "/v1/requests/gone", tokenPM); r.Status != http.StatusNotFound {
		t.Errorf("DELETE of a request deleted meanwhile: %d %s, want 404", r.Status, r.Body)
	}
}

package handlers

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/approvalbot/approvalbot/aah"
	"github.com/approvalbot/approvalbot/approval"
	"github.com/approvalbot/approvalbot/store"
	"github.com/slack-go/slack"
)

type noDecisions struct{}

func (noDecisions) Answer(context.Context, string, aah.Person, map[string]any) (approval.Outcome, error) {
	return approval.Outcome{}, nil
}
func (noDecisions) Comment(context.Context, string, string, aah.Person, string) (approval.Outcome, error) {
	return approval.Outcome{}, nil
}
func (noDecisions) SubmitWithComment(context.Context, string, aah.Person, string) (approval.Outcome, error) {
	return approval.Outcome{}, nil
}
func (noDecisions) Check(context.Context, string, aah.Person, string) error { return nil }
func (noDecisions) Reject(context.Context, string, []string, aah.Person, string) (approval.Outcome, error) {
	return approval.Outcome{}, nil
}
func (noDecisions) RejectAll(context.Context, string, aah.Person, string) (approval.Outcome, error) {
	return approval.Outcome{}, nil
}
func (noDecisions) AnswerAll(context.Context, string, aah.Person, bool) (approval.Outcome, error) {
	return approval.Outcome{}, nil
}
func (noDecisions) AnswerWithComment(context.Context, string, string, aah.Person, any, string) (approval.Outcome, error) {
	return approval.Outcome{}, nil
}

type noRequests struct{}

func (noRequests) Load(context.Context, string) (store.Record, *aah.Request, error) {
	return store.Record{}, nil, store.ErrNotFound
}

type noSlack struct{}

func (noSlack) OpenViewContext(context.Context, string, slack.ModalViewRequest) (*slack.ViewResponse, error) {
	return nil, nil
}
func (noSlack) PublishViewContext(context.Context, slack.PublishViewContextRequest) (*slack.ViewResponse, error) {
	return nil, nil
}
func (noSlack) PostEphemeralContext(context.Context, string, string, ...slack.MsgOption) (string, error) {
	return "", nil
}

// slowLister answers, with no requests, only once release is closed: it
// is slower than any budget, whatever the machine's speed.
type slowLister struct{ release chan struct{} }

func (l slowLister) ListOpen(ctx context.Context, _ store.OpenQuery) (store.Page, error) {
	select {
	case <-l.release:
	case <-ctx.Done():
		return store.Page{}, ctx.Err()
	}
	return store.Page{Items: []store.Record{}}, nil
}

// A listing slower than the budget is acked with "working on it" and
// answered through response_url with the same ephemeral body.
func TestSlowCommandAnswersThroughResponseURL(t *testing.T) {
	t.Parallel()
	got := make(chan map[string]any, 1)
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var m map[string]any
		_ = json.NewDecoder(r.Body).Decode(&m)
		got <- m
	}))
	defer hook.Close()
	async := NewAsync(2, 8)
	defer async.Close()
	lister := slowLister{release: make(chan struct{})}
	s, err := New(Options{SigningSecret: "secret", Decisions: noDecisions{}, Requests: noRequests{}, Slack: noSlack{},
		Lists: lister, CommandBudget: 20 * time.Millisecond, Async: async})
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	s.Register(mux)
	body := url.Values{"command": {"/approvals"}, "text": {"all"}, "user_id": {"U1"}, "channel_id": {"C1"},
		"response_url": {hook.URL}}.Encode()
	ts := time.Now().Unix()
	mac := hmac.New(sha256.New, []byte("secret"))
	fmt.Fprintf(mac, "v0:%d:%s", ts, body)
	req := httptest.NewRequest(http.MethodPost, "/slack/commands", strings.NewReader(body))
	req.Header.Set("X-Slack-Request-Timestamp", strconv.FormatInt(ts, 10))
	req.Header.Set("X-Slack-Signature", "v0="+hex.EncodeToString(mac.Sum(nil)))
	w := httptest.NewRecorder()
	mux.ServeHTTP(w, req)
	if w.Code != http.StatusOK || !strings.Contains(w.Body.String(), "Working on it") {
		t.Fatalf("ack: %d %s", w.Code, w.Body)
	}
	close(lister.release) // the listing finishes after the ack
	select {
	case m := <-got:
		if m["response_type"] != "ephemeral" || !strings.Contains(fmt.Sprint(m["blocks"]), "There are no open requests") {
			t.Errorf("response_url got %v", m)
		}
	case <-time.After(time.Minute):
		t.Fatal("nothing was POSTed to response_url")
	}
}

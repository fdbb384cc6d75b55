package client

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/approvalbot/approvalbot/aah"
	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
)

// Tolerance is how far a callback's webhook-timestamp may be from now,
// either way: the Standard Webhooks library's window. Older (or newer)
// deliveries are refused, and replays are remembered for this long.
const Tolerance = 5 * time.Minute

// maxCallbackBody bounds a callback's body (a response artifact is at most
// about the size of its request, 1 MiB by default).
const maxCallbackBody = 4 << 20

// CallbackHandler is the http.Handler of an agent's handoff.response_url:
// it verifies each POST's Standard Webhooks signature with secret (the
// bot's CALLBACK_SECRET, "whsec_<base64>") using the library the bot signs
// with, then decodes the decision response and calls fn.
//
//	http.Handle("/decisions", client.CallbackHandler(os.Getenv("CALLBACK_SECRET"),
//		func(ctx context.Context, r *aah.Response) error { … }))
//
// It answers 401 to a missing or bad signature and to a timestamp more than
// Tolerance from now, 409 to a replay (the same webhook-id and timestamp
// again, within Tolerance: the bot's retries are signed anew, so only a
// copy repeats them), 400 to a body that is not a decision response, 500
// when fn fails (the bot retries later, with the same webhook-id), and 204
// when fn succeeds. The bot may deliver one response more than once (a
// crash mid-delivery, or a redeliver): fn can deduplicate on WebhookID(ctx).
//
// It panics when secret is not a Standard Webhooks secret, so a bad
// CALLBACK_SECRET fails at start rather than at the first decision.
func CallbackHandler(secret string, fn func(ctx context.Context, resp *aah.Response) error) http.Handler {
	v := newVerifier(secret)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, body, ok := v.verify(w, r)
		if !ok {
			return
		}
		var resp aah.Response
		if err := json.Unmarshal(body, &resp); err != nil || resp.Content.Body.Schema != aah.SchemaResponse {
			http.Error(w, "not a decision response (content.body.schema "+aah.SchemaResponse+")", http.StatusBadRequest)
			return
		}
		if err := fn(ctx, &resp); err != nil {
			http.Error(w, "the agent could not take the response; retry later", http.StatusInternalServerError)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	})
}

// EventHandler is the http.Handler of a request's extensions.events.url:
// it verifies each POST as CallbackHandler does and calls fn with the
// event. Events arrive in order per request, at least once: deduplicate on
// WebhookID(ctx) or the event's ID.
func EventHandler(secret string, fn func(ctx context.Context, e Event) error) http.Handler {
	v := newVerifier(secret)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, body, ok := v.verify(w, r)
		if !ok {
			return
		}
		var e Event
		if err := json.Unmarshal(body, &e); err != nil || e.Type == "" || e.RequestID == "" {
			http.Error(w, "not a progress event", http.StatusBadRequest)
			return
		}
		if err := fn(ctx, e); err != nil {
			http.Error(w, "the agent could not take the event; retry later", http.StatusInternalServerError)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	})
}

type webhookIDKey struct{}

// WebhookID is the webhook-id of the callback being handled (the same on
// every delivery of one message): deduplicate on it.
func WebhookID(ctx context.Context) string {
	s, _ := ctx.Value(webhookIDKey{}).(string)
	return s
}

// ErrReplayed is why a callback seen before was refused.
var ErrReplayed = errors.New("approvalbot: callback replayed: this webhook-id and timestamp were already received")

// verifier checks signatures and remembers what it accepted, to refuse
// replays.
type verifier struct {
	wh  *standardwebhooks.Webhook
	now func() time.Time

	mu   sync.Mutex
	seen map[string]time.Time // webhook-id + timestamp → when to forget it
}

func newVerifier(secret string) *verifier {
	if _, err := decodeSecret(secret); err != nil {
		panic("approvalbot client: the callback secret is not a Standard Webhooks secret (whsec_<base64>)") // never echo it
	}
	wh, err := standardwebhooks.NewWebhook(secret)
	if err != nil {
		panic("approvalbot client: the callback secret is not a Standard Webhooks secret (whsec_<base64>)")
	}
	return &verifier{wh: wh, now: time.Now, seen: map[string]time.Time{}}
}

// verify reads and verifies r; it answers the refusal itself when not ok.
func (v *verifier) verify(w http.ResponseWriter, r *http.Request) (context.Context, []byte, bool) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		http.Error(w, "POST only", http.StatusMethodNotAllowed)
		return nil, nil, false
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxCallbackBody+1))
	if err != nil {
		http.Error(w, "unreadable body", http.StatusBadRequest)
		return nil, nil, false
	}
	if len(body) > maxCallbackBody {
		http.Error(w, "body too large", http.StatusRequestEntityTooLarge)
		return nil, nil, false
	}
	if err := v.check(body, r.Header); err != nil {
		status := http.StatusUnauthorized
		if errors.Is(err, ErrReplayed) {
			status = http.StatusConflict
		}
		http.Error(w, err.Error(), status)
		return nil, nil, false
	}
	return context.WithValue(r.Context(), webhookIDKey{}, r.Header.Get(standardwebhooks.HeaderWebhookID)), body, true
}

// check verifies the signature and the timestamp (the library's own
// tolerance) and refuses a message it already accepted.
func (v *verifier) check(body []byte, h http.Header) error {
	if err := v.wh.Verify(body, h); err != nil {
		return err
	}
	id, ts := h.Get(standardwebhooks.HeaderWebhookID), h.Get(standardwebhooks.HeaderWebhookTimestamp)
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil || ts != strconv.FormatInt(sec, 10) {
		// The signature covers the number, not how the header writes it:
		// "0…" or "+…" would sign alike and pass as a new message.
		return standardwebhooks.ErrInvalidHeaders
	}
	now := v.now()
	v.mu.Lock()
	defer v.mu.Unlock()
	for k, until := range v.seen {
		if now.After(until) {
			delete(v.seen, k)
		}
	}
	key := id + "\x00" + ts
	if _, dup := v.seen[key]; dup {
		return ErrReplayed
	}
	// Past this the library refuses the timestamp anyway.
	v.seen[key] = time.Unix(sec, 0).Add(Tolerance + time.Minute)
	return nil
}

func decodeSecret(secret string) ([]byte, error) {
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
	if err != nil || len(key) == 0 {
		return nil, errors.New("approvalbot client: the callback secret must be whsec_<base64 of the key>")
	}
	return key, nil
}

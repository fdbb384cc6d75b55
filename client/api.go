package client

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/approvalbot/approvalbot/aah"
)

// Submitted is the bot's acceptance of a request.
type Submitted struct {
	ID     string     `json:"id"`
	Status aah.Status `json:"status"` // pending; resolved when a standing approval covered it
	Links  Links      `json:"links"`
	// Duplicate is true when the bot already held this request, identical
	// (a resubmission: 200). View is then the stored request.
	Duplicate bool  `json:"-"`
	View      *View `json:"-"`
}

// Links are the API's links of a request.
type Links struct {
	Self string `json:"self"`
}

// View is a stored request as GET /v1/requests/{id} shows it.
type View struct {
	ID     string     `json:"id"`
	Status aah.Status `json:"status"`
	// Escalated says the request was escalated (its status stays
	// escalated while it is open, however many answers follow);
	// EscalatedAt is when it first was; Progress counts its answers.
	Escalated   bool                `json:"escalated"`
	EscalatedAt *time.Time          `json:"escalated_at,omitempty"`
	Progress    *aah.AnswerProgress `json:"progress,omitempty"`
	Agent       string              `json:"agent"`
	ReceivedAt  time.Time           `json:"received_at"`
	UpdatedAt   time.Time           `json:"updated_at"`
	WithdrawnAt *time.Time          `json:"withdrawn_at,omitempty"`
	Links       Links               `json:"links"`
	Slack       SlackState          `json:"slack"`
	// Request is the artifact as sent.
	Request json.RawMessage `json:"request"`
	// Response is the decision response, once the request is resolved or
	// expired; ResponseJSON its bytes as the bot stored and signed them.
	Response     *aah.Response   `json:"-"`
	ResponseJSON json.RawMessage `json:"response,omitempty"`
	// Answers are the answers so far while the request is open.
	Answers  []aah.DecisionAnswer `json:"answers,omitempty"`
	Callback *CallbackState       `json:"callback,omitempty"`
}

// Open reports whether the request can still be answered.
func (v *View) Open() bool { return v.Status.Open() }

// SlackState is where the request's Slack message stands.
type SlackState struct {
	State     string `json:"state"` // queued, posted, retrying, failed, cancelled
	Channel   string `json:"channel,omitempty"`
	TS        string `json:"ts,omitempty"`
	Permalink string `json:"permalink,omitempty"`
	Error     string `json:"error,omitempty"`
}

// CallbackState is where the delivery of the response to
// handoff.response_url stands.
type CallbackState struct {
	URL          string `json:"url"`
	State        string `json:"state"` // waiting, pending, retrying, delivered, dead, gone, none
	WebhookID    string `json:"webhook_id,omitempty"`
	AttemptCount int    `json:"attempt_count"`
	LastError    string `json:"last_error,omitempty"`
}

func decodeView(b []byte) (*View, error) {
	v := &View{}
	if err := json.Unmarshal(b, v); err != nil {
		return nil, fmt.Errorf("approvalbot: decode the request view: %w", err)
	}
	if len(v.ResponseJSON) > 0 && string(v.ResponseJSON) != "null" {
		v.Response = &aah.Response{}
		if err := json.Unmarshal(v.ResponseJSON, v.Response); err != nil {
			return nil, fmt.Errorf("approvalbot: decode the decision response: %w", err)
		}
	}
	return v, nil
}

// Submit sends the request. When r.ID is empty a new id is generated
// (Submitted.ID says which); the document is built once, so every retry
// sends the same bytes and the bot stores it once.
func (c *Client) Submit(ctx context.Context, r *Request) (Submitted, error) {
	rr := *r
	if rr.ID == "" {
		rr.ID = NewID()
	}
	doc, err := rr.Document(time.Now())
	if err != nil {
		return Submitted{}, err
	}
	return c.submit(ctx, doc)
}

// SubmitJSON sends a decision/request artifact of your own, as is. When it
// has no artifact.id one is added before the first attempt.
func (c *Client) SubmitJSON(ctx context.Context, doc []byte) (Submitted, error) {
	doc, _, err := withID(doc)
	if err != nil {
		return Submitted{}, err
	}
	return c.submit(ctx, doc)
}

func (c *Client) submit(ctx context.Context, doc []byte) (Submitted, error) {
	res, err := c.do(ctx, call{method: http.MethodPost, path: "/v1/requests", body: doc})
	if err != nil {
		return Submitted{}, err
	}
	switch res.status {
	case http.StatusAccepted:
		var s Submitted
		if err := json.Unmarshal(res.body, &s); err != nil {
			return Submitted{}, fmt.Errorf("approvalbot: decode the answer: %w", err)
		}
		return s, nil
	case http.StatusOK:
		v, err := decodeView(res.body)
		if err != nil {
			return Submitted{}, err
		}
		return Submitted{ID: v.ID, Status: v.Status, Links: v.Links, Duplicate: true, View: v}, nil
	}
	return Submitted{}, apiError(res)
}

// Get reads a request.
func (c *Client) Get(ctx context.Context, id string) (*View, error) {
	return c.get(ctx, id, 0)
}

func (c *Client) get(ctx context.Context, id string, wait time.Duration) (*View, error) {
	p := "/v1/requests/" + url.PathEscape(id)
	if wait > 0 {
		p += "?wait=" + url.QueryEscape(wait.String())
	}
	res, err := c.do(ctx, call{method: http.MethodGet, path: p, extra: wait})
	if err != nil {
		return nil, err
	}
	if res.status != http.StatusOK {
		return nil, apiError(res)
	}
	return decodeView(res.body)
}

// Wait long-polls the request until it is closed (resolved, expired or
// withdrawn) and returns it; view.Response holds the decision (nil for a
// withdrawn request). It polls again when a poll's wait ends with the
// request still open, and waits out network errors and 5xx answers
// (with backoff) until ctx ends; a refusal (404, 403…) is returned.
func (c *Client) Wait(ctx context.Context, id string) (*View, error) {
	for failures := 0; ; {
		v, err := c.get(ctx, id, c.pollWait)
		switch {
		case err == nil && !v.Open():
			return v, nil
		case err == nil:
			failures = 0
			continue
		case !transient(ctx, err):
			return nil, err
		}
		failures++
		if err := c.sleep(ctx, c.backoffFor(failures)); err != nil {
			return nil, err
		}
	}
}

// Withdraw withdraws an open request and returns it. A request already
// closed is an *APIError matching ErrConflict; one this call withdrew on
// an attempt whose answer was lost is returned as withdrawn.
func (c *Client) Withdraw(ctx context.Context, id string) (*View, error) {
	res, err := c.do(ctx, call{method: http.MethodDelete, path: "/v1/requests/" + url.PathEscape(id)})
	if err != nil {
		return nil, err
	}
	if res.status == http.StatusOK {
		return decodeView(res.body)
	}
	ae := apiError(res)
	if res.status == http.StatusConflict && res.attempts > 1 {
		// An earlier attempt may have withdrawn it before its answer was lost.
		if v, err := c.Get(ctx, id); err == nil && v.Status == aah.StatusWithdrawn {
			return v, nil
		}
	}
	return nil, ae
}

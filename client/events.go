package client

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Event is one progress event of a request (GET /v1/requests/{id}/events,
// or POSTed to extensions.events.url).
type Event struct {
	ID        string          `json:"id"`
	RequestID string          `json:"request_id"`
	Agent     string          `json:"agent"`
	Type      string          `json:"type"` // input:requested, input:received, escalated, reminded, resolved, expired, withdrawn
	At        time.Time       `json:"at"`
	Data      json.RawMessage `json:"data"`
}

// Final reports whether the event closes its request.
func (e Event) Final() bool {
	return e.Type == "resolved" || e.Type == "expired" || e.Type == "withdrawn"
}

// reconnectDelay is the bot's own advice (retry: 2000) until a stream says.
const reconnectDelay = 2 * time.Second

// Events streams one request's progress events to fn, from the one after
// lastEventID ("" for its first), and returns nil after the request's
// final event (resolved, expired or withdrawn). A dropped stream is
// resumed where it left off (Last-Event-ID), so no event is missed or
// repeated; fn returning an error stops the stream with that error.
func (c *Client) Events(ctx context.Context, id, lastEventID string, fn func(Event) error) error {
	if c.baseErr != nil {
		return c.baseErr
	}
	delay := reconnectDelay
	for failures := 0; ; {
		done, err := c.stream(ctx, id, &lastEventID, &delay, fn)
		switch {
		case done:
			return err
		case err == nil:
			// The stream ended without the request's final event: the bot
			// shut down, or (a request closed longer ago than
			// EVENTS_RETENTION) its events are gone. Resume only while
			// the request is open.
			failures = 0
			if v, gerr := c.Get(ctx, id); gerr == nil && !v.Open() {
				return nil
			}
		case !transient(ctx, err):
			return err
		default:
			failures++
		}
		wait := delay // the stream ended: reconnect as the bot asked (retry:)
		if err != nil {
			wait = c.backoffFor(failures)
			var ae *APIError
			if errors.As(err, &ae) && ae.RetryAfter > 0 {
				wait = ae.RetryAfter
			}
		}
		if err := c.sleep(ctx, wait); err != nil {
			return err
		}
	}
}

// WaitEvents waits for the request to close by following its event stream
// instead of long polling, calling onEvent (when not nil) with every event
// on the way, and returns the closed request as Get does.
func (c *Client) WaitEvents(ctx context.Context, id string, onEvent func(Event)) (*View, error) {
	err := c.Events(ctx, id, "", func(e Event) error {
		if onEvent != nil {
			onEvent(e)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	for failures := 0; ; {
		v, err := c.Get(ctx, id)
		if err == nil || !transient(ctx, err) {
			return v, err
		}
		failures++
		if err := c.sleep(ctx, c.backoffFor(failures)); err != nil {
			return nil, err
		}
	}
}

// stream reads one connection of the event stream. done is true when the
// stream is over for good: the final event arrived, or fn failed.
func (c *Client) stream(ctx context.Context, id string, last *string, delay *time.Duration, fn func(Event) error) (done bool, err error) {
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	req, err := http.NewRequestWithContext(sctx, http.MethodGet, c.base.String()+"/v1/requests/"+url.PathEscape(id)+"/events", nil)
	if err != nil {
		return true, err
	}
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("User-Agent", c.userAgent)
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	if *last != "" {
		req.Header.Set("Last-Event-ID", *last)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return false, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		return false, apiError(result{status: resp.StatusCode, header: resp.Header, body: b})
	}
	rd := bufio.NewReaderSize(resp.Body, 64<<10)
	var evID, data strings.Builder
	var typ string
	for {
		line, err := readLine(rd)
		if err != nil {
			if errors.Is(err, io.EOF) {
				return false, nil // the server ended the stream (shutting down): resume
			}
			return false, err
		}
		switch {
		case line == "":
			if data.Len() == 0 {
				evID.Reset()
				typ = ""
				continue
			}
			var e Event
			if err := json.Unmarshal([]byte(data.String()), &e); err != nil {
				return true, fmt.Errorf("approvalbot: event %s: %w", evID.String(), err)
			}
			e.ID = cmp.Or(evID.String(), e.ID)
			e.Type = cmp.Or(typ, e.Type)
			if err := fn(e); err != nil {
				return true, err
			}
			*last = e.ID
			if e.Final() {
				return true, nil
			}
			evID.Reset()
			data.Reset()
			typ = ""
		case strings.HasPrefix(line, ":"):
		default:
			field, value, _ := strings.Cut(line, ":")
			value = strings.TrimPrefix(value, " ")
			switch field {
			case "id":
				evID.Reset()
				evID.WriteString(value)
			case "event":
				typ = value
			case "data":
				if data.Len() > 0 {
					data.WriteByte('\n')
				}
				data.WriteString(value)
			case "retry":
				if ms, err := strconv.Atoi(value); err == nil && ms >= 0 {
					*delay = time.Duration(ms) * time.Millisecond
				}
			}
		}
	}
}

// maxEventLine bounds one line of the stream (an event carries the
// artifact up to 64 KiB, or a link).
const maxEventLine = 4 << 20

func readLine(rd *bufio.Reader) (string, error) {
	var b []byte
	for {
		chunk, isPrefix, err := rd.ReadLine()
		if err != nil {
			return "", err
		}
		b = append(b, chunk...)
		if len(b) > maxEventLine {
			return "", errors.New("approvalbot: an event stream line is over 4 MiB")
		}
		if !isPrefix {
			return string(b), nil
		}
	}
}

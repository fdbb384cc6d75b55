// Package sseclient reads Server-Sent Events streams, for the tests and
// benchmarks of approvalbot's event streams (GET /v1/events).
package sseclient

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"time"
)

// Event is one dispatched event of a stream.
type Event struct {
	ID, Type, Data string
}

// StatusError is Open's error when the server does not answer 200.
type StatusError struct {
	Status int
	Header http.Header
	Body   string
}

func (e *StatusError) Error() string {
	return fmt.Sprintf("sseclient: status %d: %s", e.Status, e.Body)
}

// Stream is an open stream. Its events arrive on Events, which is closed
// when the stream ends (the server ended it, or Close).
type Stream struct {
	Events <-chan Event
	// Header is the response's header.
	Header http.Header
	pings  atomic.Int64
	cancel context.CancelFunc
	done   chan struct{}
	err    error
}

// Open connects to url with the bearer token, resuming after lastEventID
// when not "".
func Open(ctx context.Context, c *http.Client, url, token, lastEventID string) (*Stream, error) {
	ctx, cancel := context.WithCancel(ctx)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		cancel()
		return nil, err
	}
	req.Header.Set("Accept", "text/event-stream")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if lastEventID != "" {
		req.Header.Set("Last-Event-ID", lastEventID)
	}
	resp, err := c.Do(req)
	if err != nil {
		cancel()
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		cancel()
		return nil, &StatusError{Status: resp.StatusCode, Header: resp.Header, Body: string(b)}
	}
	events := make(chan Event, 1024)
	s := &Stream{Events: events, Header: resp.Header, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(s.done)
		defer close(events)
		defer resp.Body.Close()
		s.err = s.read(ctx, resp.Body, events)
	}()
	return s, nil
}

func (s *Stream) read(ctx context.Context, body io.Reader, out chan<- Event) error {
	sc := bufio.NewScanner(body)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	var ev Event
	var data []string
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if len(data) > 0 {
				ev.Data = strings.Join(data, "\n")
				select {
				case out <- ev:
				case <-ctx.Done():
					return ctx.Err()
				}
			}
			ev, data = Event{}, nil
		case strings.HasPrefix(line, ":"):
			s.pings.Add(1)
		default:
			field, value, _ := strings.Cut(line, ":")
			value = strings.TrimPrefix(value, " ")
			switch field {
			case "id":
				ev.ID = value
			case "event":
				ev.Type = value
			case "data":
				data = append(data, value)
			}
		}
	}
	return sc.Err()
}

// Pings counts the comment lines (heartbeats) received.
func (s *Stream) Pings() int64 { return s.pings.Load() }

// Next waits up to within for the next event; ok is false when the stream
// ended or nothing came.
func (s *Stream) Next(within time.Duration) (Event, bool) {
	t := time.NewTimer(within)
	defer t.Stop()
	select {
	case e, ok := <-s.Events:
		return e, ok
	case <-t.C:
		return Event{}, false
	}
}

// Done is closed once the stream ended and Events is closed.
func (s *Stream) Done() <-chan struct{} { return s.done }

// Err is why the stream ended (nil: the server ended it), once Done.
func (s *Stream) Err() error { <-s.done; return s.err }

// Close disconnects, like a client going away.
func (s *Stream) Close() {
	s.cancel()
	<-s.done
}

package slackemu

import (
	"errors"
	"fmt"
	"net/http"
	"time"
)

// fault is an injected failure for the next calls of one method.
type fault struct {
	remaining  int
	slackError string        // ok:false error code (InjectError)
	status     int           // HTTP status (InjectRateLimit, InjectHTTPStatus)
	retryAfter time.Duration // Retry-After for 429s; 0 means no header
	// afterEffect: the call takes effect first (InjectFailAfterEffect),
	// then its answer is replaced by status, or dropped when status is 0.
	afterEffect bool
}

// InjectError makes the next times calls of method (e.g. "chat.postMessage")
// answer HTTP 200 {"ok":false,"error":slackError}, before authentication
// and without side effects. Injections for one method queue up in order.
func (s *Server) InjectError(method, slackError string, times int) {
	s.addFault(method, &fault{remaining: times, slackError: slackError})
}

// InjectRateLimit makes the next times calls of method answer HTTP 429 with
// the body {"ok":false,"error":"ratelimited"} and "Retry-After: <seconds>"
// (retryAfter rounded up to whole seconds, at least 1). With retryAfter 0
// the 429 carries no Retry-After header, which slack-go reports as a
// StatusCodeError instead of a *RateLimitedError.
func (s *Server) InjectRateLimit(method string, times int, retryAfter time.Duration) {
	s.addFault(method, &fault{remaining: times, status: http.StatusTooManyRequests, retryAfter: retryAfter})
}

// InjectHTTPStatus makes the next times calls of method answer with the HTTP
// status (typically 500, 502, 503 or 504) and a short text/plain body, the
// way Slack's edge answers when the API is down.
func (s *Server) InjectHTTPStatus(method string, status, times int) {
	s.addFault(method, &fault{remaining: times, status: status})
}

// InjectFailAfterEffect makes the next times calls of method take effect as
// usual (the message is posted, updated or deleted, events are sent and
// Options.OnMessage runs) and then lose Slack's answer: the caller gets the
// HTTP status (typically 500, 502, 503 or 504) with a short text/plain body,
// or, with status 0, no answer at all: the connection is dropped (over a
// listener the server aborts the response; the in-process client's round
// trip fails with ErrConnectionDropped). This is Slack having acted while
// the caller cannot know it. The call is recorded with the status answered
// (0 for a dropped connection) and its effects are visible as for any other
// call. Injections for one method queue up with the other kinds, in order.
func (s *Server) InjectFailAfterEffect(method string, status, times int) {
	s.addFault(method, &fault{remaining: times, status: status, afterEffect: true})
}

// ErrConnectionDropped is the in-process client's error for a call whose
// answer InjectFailAfterEffect dropped.
var ErrConnectionDropped = errors.New("slackemu: connection dropped after the call took effect (injected)")

func (s *Server) addFault(method string, f *fault) {
	if f.remaining <= 0 {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults[method] = append(s.faults[method], f)
}

// takeFault consumes one use of the first pending fault for method and
// returns it, or nil when none is pending. It runs with s.mu held.
func (s *Server) takeFault(method string) *fault {
	queue := s.faults[method]
	if len(queue) == 0 {
		return nil
	}
	f := queue[0]
	f.remaining--
	if f.remaining <= 0 {
		queue = queue[1:]
		if len(queue) == 0 {
			delete(s.faults, method)
		} else {
			s.faults[method] = queue
		}
	}
	return f
}

// result is what the fault answers.
func (f *fault) result() result {
	switch {
	case f.afterEffect && f.status == 0:
		return result{drop: true, plain: true}
	case f.slackError != "":
		return errResult(f.slackError)
	case f.status == http.StatusTooManyRequests:
		return rateLimited(f.retryAfter)
	default:
		return result{
			status: f.status,
			body:   []byte(fmt.Sprintf("%d %s (injected by slackemu)\n", f.status, http.StatusText(f.status))),
			plain:  true,
		}
	}
}

// rateLimited answers HTTP 429 {"ok":false,"error":"ratelimited"}, with a
// Retry-After of retryAfter rounded up to whole seconds (at least 1), or no
// Retry-After header when retryAfter is 0.
func rateLimited(retryAfter time.Duration) result {
	res := errResult("ratelimited")
	res.status = http.StatusTooManyRequests
	if retryAfter > 0 {
		res.retryAfter = ceilSeconds(retryAfter)
	}
	return res
}

// ceilSeconds rounds d up to whole seconds, returning at least 1.
func ceilSeconds(d time.Duration) int {
	secs := int((d + time.Second - 1) / time.Second)
	return max(secs, 1)
}

// SetPacing switches the per-channel chat.postMessage pacing enforcement
// on or off at runtime. An interval <= 0 selects the default of 1s.
func (s *Server) SetPacing(enabled bool, interval time.Duration) {
	if interval <= 0 {
		interval = defaultPacingInterval
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pacing = enabled
	s.pacingInterval = interval
}

// checkPacing answers a 429 when pacing is enforced and the previous
// accepted post to channel was less than the pacing interval ago. It runs
// with s.mu held; accepted posts are noted by notePost.
func (s *Server) checkPacing(channel string, now time.Time) (result, bool) {
	if !s.pacing {
		return result{}, false
	}
	last, ok := s.st.lastPost[channel]
	if !ok {
		return result{}, false
	}
	if wait := s.pacingInterval - now.Sub(last); wait > 0 {
		return rateLimited(wait), true
	}
	return result{}, false
}

// notePost records an accepted post to channel for pacing.
func (s *Server) notePost(channel string, now time.Time) {
	s.st.lastPost[channel] = now
}

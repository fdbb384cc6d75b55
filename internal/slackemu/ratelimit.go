package slackemu

import "time"

// methodLimitWindow is the window Slack's per-method rate limits count in.
const methodLimitWindow = time.Minute

// SetMethodLimit makes method (e.g. "views.publish") answer HTTP 429 with a
// Retry-After once perMinute calls were made within the last minute, across
// the whole app, the way Slack enforces its per-method rate-limit tiers
// (views.publish is Tier 4: about 100 a minute). The Retry-After says when
// the oldest call of the window leaves it. Refused calls do not count.
// perMinute <= 0 switches the limit off (the default).
func (s *Server) SetMethodLimit(method string, perMinute int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.methodLimits == nil {
		s.methodLimits = map[string]int{}
	}
	if perMinute <= 0 {
		delete(s.methodLimits, method)
		return
	}
	s.methodLimits[method] = perMinute
}

// checkMethodLimit answers a 429 when method is over its limit, else counts
// the call. It runs with s.mu held.
func (s *Server) checkMethodLimit(method string, now time.Time) (result, bool) {
	limit, ok := s.methodLimits[method]
	if !ok {
		return result{}, false
	}
	calls := s.st.recentCalls[method]
	for len(calls) > 0 && !calls[0].After(now.Add(-methodLimitWindow)) {
		calls = calls[1:]
	}
	if len(calls) >= limit {
		s.st.recentCalls[method] = calls
		return rateLimited(calls[0].Add(methodLimitWindow).Sub(now)), true
	}
	s.st.recentCalls[method] = append(calls, now)
	return result{}, false
}

package webhook

import (
	"net/http"
	"time"

	"github.com/approvalbot/approvalbot/aah"
	"github.com/approvalbot/approvalbot/store"
)

// longPoll is what GET /v1/requests/{id}?wait=… waits for: by default the
// request leaving the open states; with until=change any change to it
// (its updated_at moving, which every answer, comment, escalation,
// reminder, post and close does), counted from since= (an updated_at the
// client saw) when given, else from the request as the call found it.
type longPoll struct {
	change bool
	since  time.Time // zero: the request as found
}

// parseLongPoll reads until= and since=; it answers 400 itself when invalid.
func parseLongPoll(w http.ResponseWriter, r *http.Request) (longPoll, bool) {
	var lp longPoll
	q := r.URL.Query()
	switch q.Get("until") {
	case "", "close":
	case "change":
		lp.change = true
	default:
		writeError(w, r, http.StatusBadRequest, "invalid query", aah.FieldError{Field: "until",
			Message: `must be "close" (the default: wait until the request is resolved, expired or withdrawn) or "change" (any change)`})
		return lp, false
	}
	if s := q.Get("since"); s != "" {
		t, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			writeError(w, r, http.StatusBadRequest, "invalid query", aah.FieldError{Field: "since",
				Message: "must be an updated_at this API returned (RFC 3339), e.g. 2025-03-14T15:09:26.5Z"})
			return lp, false
		}
		lp.change, lp.since = true, t
	}
	return lp, true
}

// done returns whether a read of the request answers the poll that found
// start.
func (lp longPoll) done(start store.Record) func(store.Record) bool {
	if !lp.change {
		return func(rec store.Record) bool { return !rec.Status.Open() }
	}
	base := start.UpdatedAt
	if !lp.since.IsZero() {
		base = lp.since
	}
	return func(rec store.Record) bool {
		return !rec.Status.Open() || rec.UpdatedAt.UnixMilli() != base.UnixMilli()
	}
}

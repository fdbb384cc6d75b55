package store

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"

	"github.com/redis/go-redis/v9"
)

// An input:requested event carries the request's document (docs/api.md),
// but the stream does not hold a copy of it: that copy was a second one of
// the largest part of every request (issue #17). createEvents writes the
// event's data without "request" (and without "request_link": a document
// too large to inline is linked as before), and fillRequested, as
// EventsAfter reads the stream, adds the document the request stores,
// or the link when the request is no longer stored (deleted by retention,
// or the id now names a later request). Events written before this change
// carry "request" or "request_link" themselves and are left as they are.

// fillRequested completes the input:requested events of evs in place, with
// one pipelined round trip for those that need their document.
func (s *Store) fillRequested(ctx context.Context, evs []Event) error {
	type pending struct {
		i    int
		data map[string]json.RawMessage
		cmd  *redis.SliceCmd
		doc  *redis.StringCmd
	}
	var todo []pending
	for i, e := range evs {
		if e.Type != EventInputRequested {
			continue
		}
		var d map[string]json.RawMessage
		if json.Unmarshal(e.Data, &d) != nil {
			continue
		}
		if _, ok := d["request"]; ok {
			continue
		}
		if _, ok := d["request_link"]; ok {
			continue
		}
		todo = append(todo, pending{i: i, data: d})
	}
	if len(todo) == 0 {
		return nil
	}
	// Each command's error is read below: the pipeline's is only the
	// first, and a request without its doc key (redis.Nil) is none.
	_, _ = s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for j := range todo {
			id := evs[todo[j].i].RequestID
			todo[j].cmd = p.HMGet(ctx, s.keys.request(id), "doc", "received_ms")
			todo[j].doc = p.Get(ctx, s.keys.document(id))
		}
		return nil
	})
	for _, t := range todo {
		e := &evs[t.i]
		d := make(map[string]any, len(t.data)+1)
		for k, v := range t.data {
			d[k] = v
		}
		v, err := t.cmd.Result()
		if err != nil {
			return err
		}
		if len(v) == 2 && v[0] == nil {
			doc, err := t.doc.Result()
			switch {
			case err == nil:
				v[0] = doc // stored in its own key (storedDocument)
			case !errors.Is(err, redis.Nil):
				return err
			}
		}
		inline(d, "request", storedDocOf(v, e.At.UnixMilli()), e.RequestID)
		e.Data = json.RawMessage(mustJSON(d))
	}
	return nil
}

// storedDocOf is the document an HMGET of doc and received_ms read, when
// it is the one of the request created at ms (the event's time: the
// create writes both with one clock reading); nil otherwise.
func storedDocOf(v []any, ms int64) []byte {
	if len(v) != 2 {
		return nil
	}
	raw, _ := v[0].(string)
	received, _ := v[1].(string)
	if raw == "" || received != strconv.FormatInt(ms, 10) {
		return nil
	}
	doc, err := decodeDoc(raw)
	if err != nil {
		return nil
	}
	return doc
}

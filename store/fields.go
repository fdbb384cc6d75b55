package store

import (
	"context"
	"encoding/json"
	"errors"
	"strings"

	"github.com/redis/go-redis/v9"
)

// How a request's hash and document are stored compactly (issue #17: a
// pending request under 4 KB of Redis), and read back.

// storedDocument: a request's document is kept in a key of its own
// (keys.document), not in its hash, so that the hash stays small enough
// for Redis to store it as a listpack: one value over 64 bytes
// (hash-max-listpack-value) turns a hash into a hash table, whose entries
// cost ~50 bytes each more, ~1 KB for a pending request's ~20 fields:
// over issue #17's 4 KB per pending request. The document is written once,
// by the create (in its script), never changed, and deleted with the hash
// (retention's deleteRetained); the other values a pending request holds
// are kept under 64 bytes (encodeTimers, compactPermalink, the audit head
// in base64). A reader that needs the document reads both keys in one
// round trip (queueRead), one that does not (GetState) reads the hash
// alone. Requests stored before hold the document in the hash's "doc"
// field, which every reader takes first.
type storedRead struct {
	hash *redis.MapStringStringCmd
	doc  *redis.StringCmd // nil: not read
	want bool
}

// queueRead queues the reads of request id's hash and, when document is
// true, of its document.
func (s *Store) queueRead(ctx context.Context, p redis.Pipeliner, id string, document bool) storedRead {
	r := storedRead{hash: p.HGetAll(ctx, s.keys.request(id)), want: document}
	if document {
		r.doc = p.Get(ctx, s.keys.document(id))
	}
	return r
}

// fields is the request's hash as decodeRecord takes it: with the document
// in its "doc" field when it was asked for, without one otherwise; empty
// when there is no such request. err is the pipeline's (each command's own
// is read too). A hash whose document key does not exist (and that holds
// no "doc" field, as hashes written before the key do) is a request the
// retention sweep deleted between the two reads: the create writes both
// keys in one script and the sweep deletes both in one, so it reads as
// none, as it would a moment later, without a MULTI around every read.
func (r storedRead) fields(err error) (map[string]string, error) {
	if err != nil && !errors.Is(err, redis.Nil) {
		return nil, err
	}
	h, err := r.hash.Result()
	if err != nil {
		return nil, err
	}
	if !r.want {
		delete(h, "doc")
		return h, nil
	}
	if len(h) > 0 && h["doc"] == "" {
		doc, err := r.doc.Result()
		switch {
		case err == nil:
			h["doc"] = doc
		case errors.Is(err, redis.Nil):
			return map[string]string{}, nil // deleted meanwhile
		default:
			return nil, err
		}
	}
	return h, nil
}

// encodeTimers is the timers field for request id's timer jobs: each
// named without the request's id, which every one of them holds
// ("expire:<id>" as "expire", "remind:<id>:2" as "remind:2"), comma
// separated. Whole, in JSON, the list is over 64 bytes for two timers of a
// request named by a UUID, and the request's hash would no longer be a
// listpack (storedDocument). A list with a job that does not have this
// shape is stored in JSON, as every list was before.
func encodeTimers(id string, timers []string) string {
	if len(timers) == 0 {
		return "[]"
	}
	var b strings.Builder
	for i, tm := range timers {
		kind, rest, ok := strings.Cut(tm, ":")
		if !ok || kind == "" || strings.ContainsAny(kind, ",[\"") {
			return mustJSON(timers)
		}
		rest, ok = strings.CutPrefix(rest, id)
		if !ok || (rest != "" && (rest[0] != ':' || strings.Contains(rest, ","))) {
			return mustJSON(timers)
		}
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(kind)
		b.WriteString(rest)
	}
	return b.String()
}

// decodeTimerIDs reads the timers field of request id in either form.
func decodeTimerIDs(id, v string) []string {
	if v == "" || v[0] == '[' || v == "null" {
		return decodeTimers(v)
	}
	parts := strings.Split(v, ",")
	out := make([]string, len(parts))
	for i, p := range parts {
		kind, n, numbered := strings.Cut(p, ":")
		out[i] = kind + ":" + id
		if numbered {
			out[i] += ":" + n
		}
	}
	return out
}

// compactPermalink is the permalink field for link, Slack's link to the
// message at ts in channel: its host alone when link is
// "https://<host>/archives/<channel>/p<ts without its dot>", as Slack's
// permalinks to a channel's messages are (expandPermalink rebuilds it from
// the host and the request's slack_channel and slack_ts), the link itself
// otherwise. The link whole is 60 to 80 bytes, often over the 64 that keep
// the request's hash a listpack (storedDocument).
func compactPermalink(channel, ts, link string) string {
	host, ok := strings.CutPrefix(link, "https://")
	if !ok || channel == "" || ts == "" {
		return link
	}
	host, ok = strings.CutSuffix(host, "/archives/"+channel+"/p"+strings.Replace(ts, ".", "", 1))
	if !ok || host == "" || strings.ContainsAny(host, "/?#") {
		return link
	}
	return host
}

// expandPermalink reads the permalink field: a link, or the host
// compactPermalink kept of one.
func expandPermalink(v, channel, ts string) string {
	if v == "" || strings.Contains(v, "/") {
		return v
	}
	return "https://" + v + "/archives/" + channel + "/p" + strings.Replace(ts, ".", "", 1)
}

// encodeUsers is a list of Slack user ids (the reviewer_idx field) comma
// separated, ~11 bytes an id where JSON took ~14: a request naming five
// reviewers keeps the field under 64 bytes. A list with an entry that is
// not a plain id is kept in JSON. decodeUsers reads either.
func encodeUsers(users []string) string {
	for _, u := range users {
		if u == "" || strings.ContainsAny(u, ",[\"@<> ") {
			return mustJSON(users)
		}
	}
	return strings.Join(users, ",")
}

func decodeUsers(v string) []string {
	if v == "" || v[0] == '[' || v == "null" {
		return decodeTimers(v)
	}
	return strings.Split(v, ",")
}

// encodeMentions is the mentions field: Slack's "<@U123>" mentions as
// "@U123,U456", ~8 bytes a mention where JSON, which escapes < and >,
// took ~26. A list with another kind of entry is kept in JSON.
// decodeMentions reads either.
func encodeMentions(mentions []string) string {
	ids := make([]string, 0, len(mentions))
	for _, m := range mentions {
		id, mention := strings.CutPrefix(m, "<@")
		id, closed := strings.CutSuffix(id, ">")
		if !mention || !closed || id == "" || strings.ContainsAny(id, ",[\"@<> ") {
			return mustJSON(mentions)
		}
		ids = append(ids, id)
	}
	return "@" + strings.Join(ids, ",")
}

func decodeMentions(v string) []string {
	ids, ok := strings.CutPrefix(v, "@")
	if !ok {
		return decodeList(v)
	}
	if ids == "" {
		return []string{}
	}
	out := strings.Split(ids, ",")
	for i, id := range out {
		out[i] = "<@" + id + ">"
	}
	return out
}

// reviewerIdxField is the request hash field listing the users it is filed
// under in the reviewer indexes (encodeUsers).
const reviewerIdxField = "reviewer_idx"

// decodeList reads a JSON list of strings, as list fields were all written
// before their compact forms (and as some still are).
func decodeList(s string) []string {
	var out []string
	_ = json.Unmarshal([]byte(s), &out)
	return out
}

// decodeTimers reads the timer id list; none is nil.
func decodeTimers(s string) []string {
	if out := decodeList(s); len(out) > 0 {
		return out
	}
	return nil
}

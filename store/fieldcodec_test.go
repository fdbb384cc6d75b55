package store

import (
	"slices"
	"testing"
)

// TestTimersField: the compact timers field reads back as the list it was
// made of, and a list it cannot shorten safely is stored in JSON.
func TestTimersField(t *testing.T) {
	const id = "3f2b8c1e-9d4a-4e7b-a6c5-0b1d2e3f4a5b"
	for _, tc := range []struct {
		name   string
		timers []string
		want   string // "": JSON
	}{
		{"none", nil, "[]"},
		{"usual", []string{"expire:" + id, "escalate:" + id + ":0", "remind:" + id + ":12"}, "expire,escalate:0,remind:12"},
		{"another request's", []string{"expire:" + id, "expire:other"}, ""},
		{"a comma after the id", []string{"remind:" + id + ":1,2"}, ""},
		{"no kind", []string{":" + id}, ""},
		{"id continued", []string{"expire:" + id + "x"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := encodeTimers(id, tc.timers)
			want := tc.want
			if want == "" {
				want = mustJSON(tc.timers)
			}
			if v != want {
				t.Errorf("encodeTimers = %q, want %q", v, want)
			}
			if got := decodeTimerIDs(id, v); !slices.Equal(got, tc.timers) {
				t.Errorf("decodeTimerIDs(%q) = %q, want %q", v, got, tc.timers)
			}
		})
	}
	// Written before: JSON, read as it is.
	if got := decodeTimerIDs(id, `["expire:x"]`); !slices.Equal(got, []string{"expire:x"}) {
		t.Errorf("a JSON field reads %q", got)
	}
}

// TestPermalinkField: only Slack's usual link to the message is kept as
// its host; any other is kept whole, and each reads back as it was.
func TestPermalinkField(t *testing.T) {
	const ch, ts = "C0123456789", "1795758439.876381"
	for _, tc := range []struct {
		link, stored string
	}{
		{"https://acme.slack.com/archives/C0123456789/p1795758439876381", "acme.slack.com"},
		{"https://acme.slack.com/archives/C0123456789/p1795758439876381?thread_ts=1.2", ""},
		{"https://acme.slack.com/archives/C0OTHER/p1795758439876381", ""},
		{"https://acme.slack.com/archives/C0123456789/p1795758439876382", ""},
		{"http://acme.slack.com/archives/C0123456789/p1795758439876381", ""},
		{"https:///archives/C0123456789/p1795758439876381", ""},
		{"https://a/b/archives/C0123456789/p1795758439876381", ""},
		{"", ""},
	} {
		stored := compactPermalink(ch, ts, tc.link)
		want := tc.stored
		if want == "" {
			want = tc.link
		}
		if stored != want {
			t.Errorf("compactPermalink(%q) = %q, want %q", tc.link, stored, want)
		}
		if got := expandPermalink(stored, ch, ts); got != tc.link {
			t.Errorf("expandPermalink(%q) = %q, want %q", stored, got, tc.link)
		}
	}
}

// TestHeadField: a request's audit head in base64 reads as the hex one.
func TestHeadField(t *testing.T) {
	h := chainHead{seq: 12, hash: "4c7d8c942b3c2c9b741a2ad98d963178abc00666354283032822638e355d5cb6"}
	if f := h.field(); len(f) > 64 || parseHead(f) != h || parseHead(h.String()) != h {
		t.Errorf("field %q (%d bytes) reads %+v; String reads %+v; want %+v", f, len(f), parseHead(f), parseHead(h.String()), h)
	}
	if odd := (chainHead{seq: 1, hash: "xyz"}); parseHead(odd.field()) != odd {
		t.Errorf("a head whose hash is not hex does not read back: %q", odd.field())
	}
}

// TestUserListFields: reviewer ids and mentions read back as written, in
// the short form when every entry has the usual shape, in JSON otherwise.
func TestUserListFields(t *testing.T) {
	for _, users := range [][]string{{"U01ALICE001"}, {"U1", "W2"}, {"a,b", "U1"}, {"<@U1>"}, {}} {
		if got := decodeUsers(encodeUsers(users)); !slices.Equal(got, users) && (len(got) != 0 || len(users) != 0) {
			t.Errorf("users %q read back as %q (stored %q)", users, got, encodeUsers(users))
		}
	}
	if v := encodeUsers([]string{"U01ALICE001", "U01BOB00002", "U01CAROL003", "U01DAVE0004", "U01ERIN0005"}); len(v) > 64 {
		t.Errorf("five reviewers take %d bytes: %q", len(v), v)
	}
	for _, m := range [][]string{{"<@U1>", "<@W2>"}, {"<!subteam^S1>", "<@U1>"}, {"<@U1,U2>"}, {"U1>"}, {"<@U1"}, {}} {
		if got := decodeMentions(encodeMentions(m)); !slices.Equal(got, m) {
			t.Errorf("mentions %q read back as %q (stored %q)", m, got, encodeMentions(m))
		}
	}
	if v := encodeMentions([]string{"<@U01ALICE001>", "<@U01BOB00002>", "<@U01CAROL003>", "<@U01DAVE0004>", "<@U01ERIN0005>"}); len(v) > 64 {
		t.Errorf("five mentions take %d bytes: %q", len(v), v)
	}
	// Written before: JSON, read as it is.
	if got := decodeMentions(`["\u003c@U1\u003e"]`); !slices.Equal(got, []string{"<@U1>"}) {
		t.Errorf("JSON mentions read as %q", got)
	}
	if got := decodeUsers(`["U1","U2"]`); !slices.Equal(got, []string{"U1", "U2"}) {
		t.Errorf("JSON reviewers read as %q", got)
	}
}

package blocks

import (
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

func TestSplitTextTable(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name  string
		in    string
		limit int
		want  []string
	}{
		{"fits", "short text", 20, []string{"short text"}},
		{"at a line break in the second half", "first line here\nsecond line", 20, []string{"first line here", "second line"}},
		{"at a space, not in a word", "alpha beta gamma delta", 12, []string{"alpha beta", "gamma delta"}},
		{"never inside an escape", "abcdefghi &lt;&lt;&lt;", 12, []string{"abcdefghi", "&lt;&lt;&lt;"}},
		{"escapes without spaces", "x&lt;&lt;&lt;&lt;", 8, []string{"x&lt;", "&lt;&lt;", "&lt;"}},
		{"never inside a link", "see <https://example.com/a/b|the doc> now", 36, []string{"see", "<https://example.com/a/b|the doc>", "now"}},
		{"a mention stays whole", "hello <@U0ALICE> and <@U0BOB>", 18, []string{"hello <@U0ALICE>", "and <@U0BOB>"}},
		{"a long word is cut at a rune", "ééééééééé", 4, []string{"éééé", "éééé", "é"}},
		{"a combining mark stays with its letter", "e\u0301e\u0301e\u0301", 3, []string{"e\u0301", "e\u0301", "e\u0301"}},
		{"an emoji sequence stays whole", "ab👩‍💻cd", 4, []string{"ab", "👩‍💻c", "d"}},
		{"a flag stays whole", "a🇫🇷🇩🇪", 2, []string{"a", "🇫🇷", "🇩🇪"}},
		{"blank pieces are dropped", "aaaa\n\n\n\n\n\n\n\nbbbb", 5, []string{"aaaa", "bbbb"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			got := splitText(c.in, c.limit)
			if strings.Join(got, "|") != strings.Join(c.want, "|") {
				t.Errorf("splitText(%q, %d) = %q, want %q", c.in, c.limit, got, c.want)
			}
			checkPieces(t, c.in, got, c.limit)
		})
	}
}

// Random text of words, escapes, links, mentions, multi-byte runes,
// combining marks and emoji sequences, escaped as the renderer does and
// split at random limits: every piece fits, is valid, holds whole escapes,
// links and graphemes, and the pieces add up to the text.
func TestSplitTextProperties(t *testing.T) {
	t.Parallel()
	atoms := []string{"word", "longerword", " ", " ", "\n", "<", ">", "&", "é", "日本", "e\u0301", "👩‍💻", "👍🏽", "🇫🇷",
		"\u0915\u094d\u0937", "<@U0ALICE>", "<https://example.com/x?a=1&b=2|link>", "tab\t"}
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 2000 {
		var b strings.Builder
		for range rng.IntN(200) {
			atom := atoms[rng.IntN(len(atoms))]
			if strings.HasPrefix(atom, "<@") || strings.HasPrefix(atom, "<http") {
				b.WriteString(strings.ReplaceAll(atom, "&", "&amp;")) // markup the bot writes itself
			} else {
				b.WriteString(escape(atom))
			}
		}
		s := b.String()
		limit := 40 + rng.IntN(60)
		if i%10 == 0 {
			limit = MaxSectionText
		}
		checkPieces(t, s, splitText(s, limit), limit)
		if t.Failed() {
			t.Fatalf("input %q, limit %d", s, limit)
		}
	}
}

var wholeTokens = regexp.MustCompile(`&[a-z]+;|<[^<>]*>`)

func checkPieces(t *testing.T, in string, pieces []string, limit int) {
	t.Helper()
	for _, p := range pieces {
		if n := utf8.RuneCountInString(p); n > limit || strings.TrimSpace(p) == "" || !utf8.ValidString(p) {
			t.Errorf("piece %q: %d runes (limit %d), blank or invalid", p, n, limit)
		}
		rest := wholeTokens.ReplaceAllString(p, "")
		if strings.ContainsAny(rest, "<>") || strings.Contains(rest, "&") {
			t.Errorf("piece %q holds a partial escape or link", p)
		}
		first, _ := utf8.DecodeRuneInString(p)
		if unicode.In(first, unicode.Mn, unicode.Mc, unicode.Me) || first == '\u200d' || (first >= 0x1F3FB && first <= 0x1F3FF) {
			t.Errorf("piece %q starts inside a grapheme", p)
		}
	}
	squash := func(s string) string { return strings.Join(strings.Fields(s), "") }
	if squash(strings.Join(pieces, "")) != squash(in) {
		t.Errorf("pieces %q do not add up to %q", pieces, in)
	}
}

package blocks

import (
	"fmt"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// Block Kit limits the renderer must respect (Slack's Block Kit reference).
const (
	MaxMessageBlocks  = 50
	MaxHeaderText     = 150
	MaxSectionText    = 3000
	MaxContextText    = 2000 // per context element; kept well inside Slack's limit
	MaxButtonText     = 75
	MaxOptionText     = 75
	MaxOptionValue    = 150
	MaxOptionDesc     = 75
	MaxSelectOptions  = 100
	MaxFallbackText   = 3000 // top-level text; Slack truncates past 40,000 but notifications need far less
	MaxPromptLength   = 2000 // a prompt doubles as a modal input label (2000)
	maxDescriptionLen = 20000
)

// escape makes agent-supplied text safe inside mrkdwn: Slack treats <, > and
// & as control characters, and an unescaped "<!channel>" would notify a
// whole channel. https://api.slack.com/reference/surfaces/formatting#escaping
func escape(s string) string {
	return mrkdwnEscaper.Replace(s)
}

var mrkdwnEscaper = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;")

// truncatedMarker ends text that was cut to fit; the full text stays
// reachable through the message's "View details" button.
const truncatedMarker = "… _(truncated — see View details)_"

// fit escapes s and shortens it to at most limit characters (runes), ending
// with marker when it had to cut. It never splits an escape sequence.
func fit(s string, limit int, marker string) (out string, truncated bool) {
	e := escape(s)
	if utf8.RuneCountInString(e) <= limit {
		return e, false
	}
	budget := limit - utf8.RuneCountInString(marker)
	var b strings.Builder
	n := 0
	for _, r := range s {
		piece := escape(string(r))
		c := utf8.RuneCountInString(piece)
		if n+c > budget {
			break
		}
		b.WriteString(piece)
		n += c
	}
	return strings.TrimRight(b.String(), " \n") + marker, true
}

// plain shortens plain_text (no escaping: plain_text is not parsed).
func plain(s string, limit int) string {
	if utf8.RuneCountInString(s) <= limit {
		return s
	}
	r := []rune(s)
	return string(r[:limit-1]) + "…"
}

// slackDate renders t with Slack's date formatting, so every reader sees it
// in their own time zone; the fallback is UTC.
func slackDate(t time.Time) string {
	return fmt.Sprintf("<!date^%d^{date_short_pretty} at {time}|%s>", t.Unix(), t.UTC().Format("2006-01-02 15:04 UTC"))
}

// humanDuration prints a duration the way the agent likely meant it.
func humanDuration(d time.Duration) string {
	switch {
	case d%(24*time.Hour) == 0:
		n := int(d / (24 * time.Hour))
		return plural(n, "day")
	case d%time.Hour == 0:
		return plural(int(d/time.Hour), "hour")
	case d%time.Minute == 0:
		return plural(int(d/time.Minute), "minute")
	}
	return d.String()
}

func plural(n int, unit string) string {
	if n == 1 {
		return "1 " + unit
	}
	return fmt.Sprintf("%d %ss", n, unit)
}

// Escape makes agent-supplied text safe inside mrkdwn (see escape); for
// other messages the bot builds, such as reminders.
func Escape(s string) string { return escape(s) }

// Date is Slack's reader-local date formatting of t, with a UTC fallback.
func Date(t time.Time) string { return slackDate(t) }

// splitText splits mrkdwn into pieces of at most limit runes, for text too
// long for one section. It cuts at the last line break in the second half of
// the window, else at the last space there, else at the last safe place in
// the window; a safe place is never inside an "&…;" escape, a "<…>" link or
// mention, a multi-byte rune or a grapheme (a letter and its combining marks,
// an emoji sequence). The white space at a cut is dropped, and so are pieces
// that would hold nothing else. Only a single token or grapheme longer than
// limit (never the case for a section's 3000) is cut where it must be.
func splitText(s string, limit int) []string {
	var out []string
	for s != "" {
		cut := len(s)
		if utf8.RuneCountInString(s) > limit {
			cut = cutPoint(s, limit)
		}
		if piece := strings.TrimRight(s[:cut], " \t\n"); strings.TrimSpace(piece) != "" {
			out = append(out, piece)
		}
		s = strings.TrimLeft(s[cut:], " \t\n")
	}
	return out
}

// cutPoint is the byte index at which splitText cuts s (longer than limit
// runes): s[:cut] holds between 1 and limit runes.
func cutPoint(s string, limit int) int {
	var line, space, safe, tokenStart int
	var lineN, spaceN int
	token := rune(0) // '&' or '<' while inside an escape or a link
	n := 0
	prev := rune(-1)
	for i, r := range s {
		// Position i: s[:i] holds n runes.
		if n > 0 && token == 0 && graphemeBoundary(prev, r) {
			safe = i
			switch {
			case prev == '\n':
				line, lineN = i, n
			case prev == ' ' || prev == '\t':
				space, spaceN = i, n
			}
		}
		if n == limit {
			break
		}
		if token == '&' && r != ';' && r != '#' && !isASCIIAlnum(r) {
			token = 0 // a bare "&": not an escape
		}
		switch {
		case token == '&' && r == ';', token == '<' && r == '>':
			token = 0
		case token == 0 && (r == '&' || r == '<'):
			token, tokenStart = r, i
		}
		prev = r
		n++
	}
	switch {
	case line > 0 && lineN >= limit/2:
		return line
	case space > 0 && spaceN >= limit/2:
		return space
	case safe > 0:
		return safe
	case tokenStart > 0:
		return tokenStart // a token longer than the window: cut before it
	}
	// One grapheme or token longer than the window: cut at a rune boundary.
	n = 0
	for i := range s {
		if n == limit {
			return i
		}
		n++
	}
	return len(s)
}

func isASCIIAlnum(r rune) bool {
	return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9'
}

// graphemeBoundary reports whether a cut between prev and r is a grapheme
// boundary, conservatively: never before a combining mark, a variation
// selector, an emoji modifier or tag, a Hangul vowel or final consonant;
// never on either side of a zero-width joiner; never inside CR LF or between
// two regional indicators (a flag).
func graphemeBoundary(prev, r rune) bool {
	switch {
	case prev == '\r' && r == '\n':
		return false
	case prev == '\u200d' || r == '\u200d':
		return false
	case unicode.In(r, unicode.Mn, unicode.Me, unicode.Mc):
		return false
	case r >= 0xFE00 && r <= 0xFE0F, r >= 0xE0100 && r <= 0xE01EF: // variation selectors
		return false
	case r >= 0x1F3FB && r <= 0x1F3FF, r >= 0xE0020 && r <= 0xE007F: // emoji modifiers, tags
		return false
	case r >= 0x1160 && r <= 0x11FF, r >= 0xD7B0 && r <= 0xD7FF: // Hangul jamo V and T
		return false
	case isRegionalIndicator(prev) && isRegionalIndicator(r):
		return false
	}
	return true
}

func isRegionalIndicator(r rune) bool { return r >= 0x1F1E6 && r <= 0x1F1FF }

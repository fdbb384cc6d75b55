package blocks

import (
	"fmt"
	"strings"
	"time"
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

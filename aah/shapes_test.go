package aah

import (
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"
)

// The expressions the shapes were written from: each shape must say what
// its expression says, for every string.
var shapeOracles = map[string]struct {
	expr  *regexp.Regexp
	shape func(string) bool
}{
	"request id":   {regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$`), isRequestID},
	"decision id":  {regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$`), isDecisionID},
	"channel":      {regexp.MustCompile(`^(?:[CGD][A-Z0-9]{2,20}|#?[a-z0-9][a-z0-9_-]{0,79})$`), isSlackChannel},
	"user":         {regexp.MustCompile(`^[UW][A-Z0-9]{2,20}$`), isSlackUser},
	"user group":   {regexp.MustCompile(`^S[A-Z0-9]{2,20}$`), isUserGroup},
	"channel id":   {regexp.MustCompile(`^[CG][A-Z0-9]{2,20}$`), isChannelID},
	"channel name": {regexp.MustCompile(`^#[a-z0-9][a-z0-9_-]{0,79}$`), isChannelName},
	"role name":    {regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9 _.-]*$`), isRoleName},
	"action key":   {regexp.MustCompile(`^[A-Za-z0-9_.:/-]{1,128}$`), isActionKey},
	"date":         {regexp.MustCompile(`^[0-9]{4}-[0-9]{2}-[0-9]{2}$`), isDateOnlyForm},
	"date-time": {regexp.MustCompile(`^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(?:\.[0-9]+)?(?:Z|[+-](?:[01][0-9]|2[0-3]):[0-5][0-9])$`),
		isRFC3339Form},
}

// shapeSeeds are strings on the edges of the shapes, which the random ones
// are made from too.
var shapeSeeds = []string{
	"", "a", "A", "0", "_", "#", "#a", "##a", "#A", "C", "C0", "C01", "D0123", "G" + strings.Repeat("A", 20),
	"C" + strings.Repeat("A", 21), "U0ALICE", "W12", "S0GROUP", "s0group", "#approvals", "approvals", "#app-rovals_2",
	"req-42", "req:42.a_b", "x" + strings.Repeat("y", 127), "x" + strings.Repeat("y", 128), "deploy/prod:eu-1",
	"Release Managers", " Release", "Release\n", "é", "aé", "#é",
	"2026-02-17", "2026-2-17", "2026-02-17T17:00:00Z", "2026-02-17T17:00:00.123456789Z", "2026-02-17T17:00:00.Z",
	"2026-02-17T17:00:00+02:00", "2026-02-17T17:00:00-23:59", "2026-02-17T17:00:00+24:00", "2026-02-17T17:00:00+19:60",
	"2026-02-17T17:00:00+1:00", "2026-02-17T17:00:00z", "2026-02-17t17:00:00Z", "2026-02-17T17:00:00Z\n",
	"2026-02-17T17:00:00,5Z", "2026-02-17 17:00:00Z", "2026-02-17T17:00:00+02:00Z",
}

func TestShapesSayWhatTheirExpressionsSay(t *testing.T) {
	t.Parallel()
	check := func(s string) {
		for name, o := range shapeOracles {
			if got, want := o.shape(s), o.expr.MatchString(s); got != want {
				t.Errorf("%s of %q: %v, its expression says %v", name, s, got, want)
			}
		}
	}
	for _, s := range shapeSeeds {
		check(s)
	}
	// Random strings: seeds mutated (a byte changed, dropped, added or
	// repeated), and strings of the shapes' bytes of every length around
	// their limits.
	rng := rand.New(rand.NewPCG(17, 2026))
	const alphabet = "aAzZ09_.:-/ #TZ+U WCGDS\né\xff"
	for range 50000 {
		var s string
		if rng.IntN(2) == 0 {
			b := []byte(shapeSeeds[rng.IntN(len(shapeSeeds))])
			for range 1 + rng.IntN(3) {
				i := 0
				if len(b) > 0 {
					i = rng.IntN(len(b))
				}
				c := alphabet[rng.IntN(len(alphabet))]
				switch op := rng.IntN(4); {
				case op == 0 && len(b) > 0:
					b[i] = c
				case op == 1 && len(b) > 0:
					b = append(b[:i], b[i+1:]...)
				case op == 2:
					b = append(b[:i], append([]byte{c}, b[i:]...)...)
				default:
					b = append(b, b...)
				}
			}
			s = string(b)
		} else {
			b := make([]byte, rng.IntN(135))
			for i := range b {
				b[i] = alphabet[rng.IntN(len(alphabet))]
			}
			s = string(b)
		}
		check(s)
	}
}

func FuzzShapes(f *testing.F) {
	for _, s := range shapeSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for name, o := range shapeOracles {
			if got, want := o.shape(s), o.expr.MatchString(s); got != want {
				t.Errorf("%s of %q: %v, its expression says %v", name, s, got, want)
			}
		}
	})
}

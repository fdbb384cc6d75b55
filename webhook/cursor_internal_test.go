package webhook

import (
	"slices"
	"testing"
)

// A cursor survives its round trip through an SSE id, whatever mix of
// empty, equal and far-apart positions it holds.
func TestCursorRoundTrip(t *testing.T) {
	c := startCursor()
	if got, ok := parseCursor(c.String()); !ok || !slices.Equal(got, c) {
		t.Fatalf("the start cursor %q came back as %v", c.String(), got)
	}
	c[0], c[3], c[7], c[15] = "1741964966000-0", "1741964966000-12", "1795688437878-0", "1741964966001-3"
	s := c.String()
	got, ok := parseCursor(s)
	if !ok || !slices.Equal(got, c) {
		t.Fatalf("%v -> %q -> %v", c, s, got)
	}
	if len(s) > 80 {
		t.Errorf("cursor %q is %d bytes", s, len(s))
	}
	for _, bad := range []string{"", "c1.", "c1.x", "1-0", "c1.0" + ".-1...............", "c1.0." + "z!..............."} {
		if _, ok := parseCursor(bad); ok {
			t.Errorf("parseCursor(%q) accepted it", bad)
		}
	}
}

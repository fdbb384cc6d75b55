package bot_test

import (
	"net/http"
	"testing"
)

// One transient failure of a post's chat.postMessage (a 503: nothing
// posted, but the bot cannot know) keeps the post's place in its channel:
// the request accepted after it is not posted first.
func TestTransientPostFailureKeepsArrivalOrder(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.emu.InjectHTTPStatus("chat.postMessage", http.StatusServiceUnavailable, 1)
	h.startJobs()
	first := h.accept(exampleWith(t, "order-first", setChannel("C0APPROVALS")))
	second := h.accept(exampleWith(t, "order-second", setChannel("C0APPROVALS")))
	eventually(t, "both posted", func() bool { return h.record(first).Posted() && h.record(second).Posted() })
	a, b := h.record(first), h.record(second)
	if b.Slack.TS < a.Slack.TS {
		t.Errorf("%s (accepted second) shows at %s, before %s (accepted first) at %s: the channel is out of arrival order",
			second, b.Slack.TS, first, a.Slack.TS)
	}
	if n := len(h.emu.Messages("C0APPROVALS")); n != 2 {
		t.Errorf("%d messages in the channel, want 2", n)
	}
}

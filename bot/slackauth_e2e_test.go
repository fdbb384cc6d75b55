package bot_test

import (
	"bytes"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/approvalbot/approvalbot/internal/slackemu"
	"github.com/approvalbot/approvalbot/slackout"
	"github.com/approvalbot/approvalbot/store/redistest"
	"github.com/slack-go/slack"
)

// logRecorder keeps the service's log and signals each record, so a test
// waits on what the bot said rather than on time.
type logRecorder struct {
	mu      sync.Mutex
	buf     bytes.Buffer
	records chan string
}

func newLogRecorder() *logRecorder { return &logRecorder{records: make(chan string, 1024)} }

func (l *logRecorder) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	select {
	case l.records <- string(p): // one Write per record (slog's handlers)
	default:
	}
	return l.buf.Write(p)
}

func (l *logRecorder) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// waitFor returns the first record containing text, failing after 10s.
func (l *logRecorder) waitFor(t *testing.T, text string) string {
	t.Helper()
	ctx := ctxTimeout(t, 10*time.Second)
	for {
		select {
		case r := <-l.records:
			if strings.Contains(r, text) {
				return r
			}
		case <-ctx.Done():
			t.Fatalf("no log record with %q; the log:\n%s", text, l.String())
		}
	}
}

func withLog(l *logRecorder) harnessOption {
	return func(_ *configT, d *depsT) { d.Logger = slog.New(slog.NewTextHandler(l, nil)) }
}

func withSlackAuthRetry(first time.Duration) harnessOption {
	return func(_ *configT, d *depsT) { d.SlackAuthRetry = first }
}

// A bot token Slack refuses shows at start: in the log (naming Slack's error,
// not the token) and in /readyz, and no job runs, so queued posts are not
// burnt as permanent "invalid_auth" failures.
func TestWrongBotTokenShowsInLogAndReadyzAtStart(t *testing.T) {
	t.Parallel()
	const wrongToken = "xoxb-9999-8888-wrongsecretpart"
	rdb, prefix := redistest.Client(t)
	emu := slackemu.New(slackemu.Options{})
	logs := newLogRecorder()
	h := newHarnessOn(t, rdb, prefix, emu, withLog(logs), withSlackAuthRetry(20*time.Millisecond),
		func(c *configT, d *depsT) {
			c.SlackBotToken = wrongToken
			d.Slack = slack.New(wrongToken, slack.OptionAPIURL(emu.APIURL()), slack.OptionHTTPClient(emu.Client()))
			d.SlackChat = &slackout.ChatEndpoint{Client: emu.Client(), APIURL: emu.APIURL(), Token: wrongToken}
		})
	r := h.do(http.MethodGet, "/readyz", "", "", nil)
	if r.Status != http.StatusServiceUnavailable || !strings.Contains(r.json(t)["slack"].(string), "not confirmed yet") {
		t.Errorf("/readyz before auth.test: %d %s", r.Status, r.Body)
	}
	if r := h.post(example(t)); r.Status != http.StatusAccepted {
		t.Fatalf("intake with an unconfirmed token: %d %s", r.Status, r.Body)
	}

	h.startJobs()
	record := logs.waitFor(t, "auth.test failed")
	if !strings.Contains(record, "level=ERROR") || !strings.Contains(record, "slack_error=invalid_auth") {
		t.Errorf("the failure is not logged as an error naming invalid_auth: %s", record)
	}
	r = h.do(http.MethodGet, "/readyz", "", "", nil)
	body := r.json(t)
	if r.Status != http.StatusServiceUnavailable || body["redis"] != "ok" ||
		!strings.Contains(body["slack"].(string), "invalid_auth") || !strings.Contains(body["reason"].(string), "slack: auth.test answered invalid_auth") {
		t.Errorf("/readyz with a wrong token: %d %s", r.Status, r.Body)
	}

	// It keeps trying, and still runs no job.
	if _, err := emu.WaitForCalls(ctxTimeout(t, 10*time.Second), "auth.test", 3); err != nil {
		t.Fatal(err)
	}
	if n := len(emu.CallsTo("chat.postMessage")); n != 0 {
		t.Errorf("%d posts with a token Slack refuses", n)
	}
	if st := h.get("aah_decision_abc123")["slack"].(map[string]any)["state"]; st != "queued" {
		t.Errorf("slack state = %v, want queued (not failed) while the token is refused", st)
	}
	if out := logs.String() + string(r.Body); strings.Contains(out, "wrongsecretpart") {
		t.Errorf("the token leaked:\n%s", out)
	}
}

// A Slack outage during a deploy heals by itself: auth.test is retried, the
// process becomes ready, logs who it is, and posts what was queued.
func TestSlackOutageAtStartHealsByItself(t *testing.T) {
	t.Parallel()
	rdb, prefix := redistest.Client(t)
	emu := slackemu.New(slackemu.Options{})
	emu.InjectHTTPStatus("auth.test", http.StatusServiceUnavailable, 2)
	logs := newLogRecorder()
	h := newHarnessOn(t, rdb, prefix, emu, withLog(logs), withSlackAuthRetry(20*time.Millisecond))
	if r := h.post(example(t)); r.Status != http.StatusAccepted {
		t.Fatalf("intake: %d %s", r.Status, r.Body)
	}
	h.startJobs()
	if record := logs.waitFor(t, "auth.test failed"); !strings.Contains(record, "level=WARN") ||
		!strings.Contains(record, "HTTP 503") {
		t.Errorf("a Slack outage is logged as %s", record)
	}
	h.waitSlackReady()
	if r := h.do(http.MethodGet, "/readyz", "", "", nil); r.Status != http.StatusOK || r.json(t)["slack"] != "ok" {
		t.Errorf("/readyz after the outage: %d %s", r.Status, r.Body)
	}
	identity := logs.waitFor(t, "Slack accepted the bot token")
	for _, want := range []string{"team_id=" + slackemu.DefaultTeamID, "bot_user_id=" + slackemu.DefaultBotUserID, "bot_id=B0BOT"} {
		if !strings.Contains(identity, want) {
			t.Errorf("identity log lacks %s: %s", want, identity)
		}
	}
	if n := len(emu.CallsTo("auth.test")); n != 3 {
		t.Errorf("auth.test called %d times, want 3 (two 503s, then ok)", n)
	}
	if _, err := emu.WaitForCalls(ctxTimeout(t, 10*time.Second), "chat.postMessage", 1); err != nil {
		t.Fatalf("the queued request was not posted once ready: %v", err)
	}
}

// waitSlackReady waits until auth.test has confirmed the bot token.
func (h *harness) waitSlackReady() {
	h.t.Helper()
	select {
	case <-h.svc.SlackReady():
	case <-ctxTimeout(h.t, 10*time.Second).Done():
		h.t.Fatal("Slack never accepted the bot token")
	}
}

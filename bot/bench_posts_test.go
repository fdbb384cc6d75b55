package bot_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/approvalbot/approvalbot/internal/slackemu"
	"github.com/approvalbot/approvalbot/slackout"
	"github.com/approvalbot/approvalbot/store/redistest"
	"github.com/slack-go/slack"
)

// slowTransport answers every Slack call latency late, as a distant or
// busy Slack does.
type slowTransport struct {
	next    http.RoundTripper
	latency time.Duration
}

func (s slowTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	select {
	case <-time.After(s.latency):
	case <-r.Context().Done():
		return nil, r.Context().Err()
	}
	return s.next.RoundTrip(r)
}

// BenchmarkPostsWithSlowSlack is how many requests a second one process
// posts to Slack when every Slack call takes 50 ms, by WORKER_CONCURRENCY,
// into one channel and spread over 64. The requests are stored first (not
// timed); the clock runs from starting the job runner to the last
// chat.postMessage. Pacing is at its least in the bot (1 ms) and off in the
// emulator: this measures the runner, not Slack's 1 message a second per
// channel. Posts to one channel leave one at a time, in arrival order (a
// post holds the channel's turn during its call), so into one channel it
// is at most 1/latency (20 a second) whatever the workers. Run it with a
// fixed -benchtime (e.g. 400x).
func BenchmarkPostsWithSlowSlack(b *testing.B) {
	for _, bc := range []struct{ channels, workers int }{{1, 4}, {1, 32}, {64, 4}, {64, 32}} {
		channels, workers := bc.channels, bc.workers
		b.Run(fmt.Sprintf("channels=%d/workers=%d", channels, workers), func(b *testing.B) {
			rdb, prefix := redistest.Client(b)
			ws := slackemu.DefaultWorkspace()
			for i := range channels {
				ws.Channels = append(ws.Channels, slackemu.Channel{ID: fmt.Sprintf("C0SLOW%02d", i), Name: fmt.Sprintf("slow-%02d", i), IsMember: true})
			}
			emu := slackemu.New(slackemu.Options{Workspace: &ws})
			emu.SetPacing(false, 0)
			slow := &http.Client{Transport: slowTransport{next: emu.Client().Transport, latency: 50 * time.Millisecond}}
			h := newHarnessOn(b, rdb, prefix, emu, func(c *configT, d *depsT) {
				c.WorkerConcurrency = workers
				c.SlackPostInterval = time.Millisecond
				d.Slack = slack.New(emu.Token(), slack.OptionAPIURL(emu.APIURL()), slack.OptionHTTPClient(slow))
				d.SlackChat = &slackout.ChatEndpoint{Client: slow, APIURL: emu.APIURL(), Token: emu.Token()}
			})
			for i := range b.N {
				if r := h.post(exampleWith(b, fmt.Sprintf("slow-%d", i), setChannel(fmt.Sprintf("C0SLOW%02d", i%channels)))); r.Status != http.StatusAccepted {
					b.Fatalf("POST: %d %s", r.Status, r.Body)
				}
			}
			b.ResetTimer()
			start := time.Now()
			h.startJobs()
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
			defer cancel()
			if _, err := h.emu.WaitForCalls(ctx, "chat.postMessage", b.N); err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "posts/s")
		})
	}
}

package jobs_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/approvalbot/approvalbot/jobs"
	"github.com/approvalbot/approvalbot/store"
)

// A failing job's log line names the AAH request it belongs to under
// request_id, the key of the HTTP access log and of the intake and callback
// lines, so one search ties a request's API calls to its jobs.
func TestJobLogLinesCarryTheRequestID(t *testing.T) {
	t.Parallel()
	var buf lockedBuffer
	q := &fakeQueue{jobs: []store.Job{{ID: "k:aah_1", Kind: "k", RequestID: "aah_1", Attempt: 1}}, settled: make(chan string, 1)}
	r, err := jobs.NewRunner(q, jobs.Options{Handlers: map[string]jobs.Handler{"k": &fakeHandler{err: errors.New("boom")}},
		MaxAttempts: 3, PollInterval: 10 * time.Millisecond, Logger: slog.New(slog.NewJSONHandler(&buf, nil))})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	<-q.settled // the runner logs the failure before it settles the job
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	var line string
	for l := range strings.SplitSeq(buf.String(), "\n") {
		if strings.Contains(l, "job failed; will retry") {
			line = l
		}
	}
	for _, want := range []string{`"job":"k:aah_1"`, `"kind":"k"`, `"request_id":"aah_1"`} {
		if !strings.Contains(line, want) {
			t.Errorf("the failure's log line lacks %s: %q", want, line)
		}
	}
}

type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}
func (b *lockedBuffer) String() string { b.mu.Lock(); defer b.mu.Unlock(); return b.buf.String() }

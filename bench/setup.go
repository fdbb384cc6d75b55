package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/approvalbot/approvalbot/bot"
	"github.com/approvalbot/approvalbot/examples"
	"github.com/approvalbot/approvalbot/internal/slackemu"
	"github.com/approvalbot/approvalbot/slackout"
	"github.com/approvalbot/approvalbot/store"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
	"github.com/slack-go/slack"
)

// benchToken is the one agent's intake token.
const benchToken = "bench-token-0123456789abcdef"

// exampleID is artifact.id in seed 000's example; each request replaces it.
const exampleID = "aah_decision_abc123"

// env is what every measurement shares: one redis-server (REDIS_URL, or one
// started here on a free loopback port) and seed 000's example body.
type env struct {
	rdb      *redis.Client
	url      string
	started  *exec.Cmd // the redis-server started here, nil with REDIS_URL
	body     []byte
	prefixes []string
	keep     bool // Close leaves the prefixes' keys (Config.Keep)
	seq      atomic.Int64
	logger   *slog.Logger
}

func newEnv(logw io.Writer, level slog.Level) (*env, error) {
	e := &env{logger: slog.New(slog.NewTextHandler(logw, &slog.HandlerOptions{Level: level}))}
	e.url = os.Getenv("REDIS_URL")
	if e.url == "" {
		bin, err := exec.LookPath("redis-server")
		if err != nil {
			return nil, errors.New("bench: set REDIS_URL or put redis-server on PATH")
		}
		port, err := freePort()
		if err != nil {
			return nil, err
		}
		e.started = exec.Command(bin, "--port", strconv.Itoa(port), "--bind", "127.0.0.1",
			"--save", "", "--appendonly", "no", "--protected-mode", "no")
		if err := e.started.Start(); err != nil {
			return nil, fmt.Errorf("bench: start redis-server: %w", err)
		}
		e.url = fmt.Sprintf("redis://127.0.0.1:%d/0", port)
	}
	opts, err := redis.ParseURL(e.url)
	if err != nil {
		e.Close()
		return nil, fmt.Errorf("bench: REDIS_URL: %w", err)
	}
	e.rdb = redis.NewClient(opts)
	if err := waitPing(e.rdb, 10*time.Second); err != nil {
		e.Close()
		return nil, fmt.Errorf("bench: redis at %s: %w", e.url, err)
	}
	e.body, err = examples.Request(time.Now(), examples.Options{})
	if err != nil {
		e.Close()
		return nil, err
	}
	if !bytes.Contains(e.body, []byte(exampleID)) {
		e.Close()
		return nil, fmt.Errorf("bench: the example has no %q to replace", exampleID)
	}
	return e, nil
}

// deletePrefixes deletes every key the run wrote.
func (e *env) deletePrefixes() {
	ctx := context.Background()
	for _, p := range e.prefixes {
		iter := e.rdb.Scan(ctx, 0, p+":*", 1000).Iterator()
		var batch []string
		for iter.Next(ctx) {
			batch = append(batch, iter.Val())
			if len(batch) == 1000 {
				e.rdb.Unlink(ctx, batch...)
				batch = batch[:0]
			}
		}
		if len(batch) > 0 {
			e.rdb.Unlink(ctx, batch...)
		}
	}
}

// Close deletes every key the run wrote (unless kept) and stops a
// redis-server started here.
func (e *env) Close() {
	if e.rdb != nil {
		if !e.keep {
			e.deletePrefixes()
		}
		_ = e.rdb.Close()
	}
	if e.started != nil && e.started.Process != nil {
		_ = e.started.Process.Kill()
		_ = e.started.Wait()
	}
}

// prefix is a fresh key prefix for one measurement.
func (e *env) prefix(name string) string {
	p := fmt.Sprintf("bench%d-%d-%s", os.Getpid(), e.seq.Add(1), name)
	e.prefixes = append(e.prefixes, p)
	return p
}

// requestBody is the example under a new artifact id.
func (e *env) requestBody(id string) []byte {
	return bytes.Replace(e.body, []byte(exampleID), []byte(id), 1)
}

// instance is one approvalbot service in process, served over loopback HTTP.
type instance struct {
	svc   *bot.Service
	store *store.Store
	http  *httptest.Server
	emu   *slackemu.Server
	reg   *prometheus.Registry // the bot's metrics
}

func (i *instance) Close() {
	i.http.Close()
	i.svc.Close()
}

// newBot builds the service as the tests' harness does (bot/harness_test.go)
// with the product's defaults for the job runner (32 workers, 250 ms poll)
// and per-agent limits set too high to refuse anything, so their cost is
// counted. The job runner is not started here (instance.startJobs does).
func (e *env) newBot(prefix string, emu *slackemu.Server, postInterval time.Duration) (*instance, error) {
	return e.newBotOn(e.rdb, prefix, emu, postInterval)
}

// newBotOn is newBot on the Redis of rdb.
func (e *env) newBotOn(rdb *redis.Client, prefix string, emu *slackemu.Server, postInterval time.Duration) (*instance, error) {
	cfg := bot.Config{
		SlackBotToken:        emu.Token(),
		SlackSigningSecret:   bot.LocalSigningSecret,
		CallbackSecret:       bot.LocalCallbackSecret,
		CallbackAllowPrivate: true,
		SlackDefaultChannel:  bot.LocalDefaultChannel,
		SlackPostInterval:    postInterval,
		IntakeMaxBodyBytes:   1 << 20,
		WorkerConcurrency:    32,
		JobLease:             time.Minute,
		JobMaxAttempts:       12,
		JobPollInterval:      250 * time.Millisecond,
		DefaultReviewers:     slices.Clone(bot.LocalDefaultReviewers),
		DirectoryCacheTTL:    5 * time.Minute, // the product's default: a click's name lookup is cached
		StoreRequestTimeout:  2 * time.Second,
	}
	cfg, err := cfg.WithTokens("bench:" + benchToken)
	if err != nil {
		return nil, err
	}
	if cfg, err = cfg.WithLimits("1000000/s", "", 1_000_000, ""); err != nil {
		return nil, err
	}
	reg := prometheus.NewRegistry()
	metrics := bot.NewMetrics(reg)
	hc := emu.Client()
	hc.Transport = metrics.InstrumentTransport(hc.Transport)
	st, err := store.New(rdb, store.Options{Prefix: prefix, HomeJobs: true,
		NotifyJobs: cfg.NotifyRequester, OpenCounts: cfg.Limits().CapsOpen()})
	if err != nil {
		return nil, err
	}
	svc, err := bot.NewService(bot.Deps{
		Config: cfg, Store: st, Metrics: metrics, Registry: reg, Logger: e.logger,
		Slack:     slack.New(emu.Token(), slack.OptionAPIURL(emu.APIURL()), slack.OptionHTTPClient(hc)),
		SlackChat: &slackout.ChatEndpoint{Client: hc, APIURL: emu.APIURL(), Token: emu.Token()},
	})
	if err != nil {
		return nil, err
	}
	return &instance{svc: svc, store: st, http: httptest.NewServer(svc.Handler()), emu: emu, reg: reg}, nil
}

// newFloor is the floor server: a minimal Go handler that decodes the same
// JSON body and makes one Redis round trip (SET of the body under its id) on
// the same redis-server and client settings, answering 202 as intake does.
func (e *env) newFloor(prefix string) *httptest.Server {
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		var doc map[string]any
		if err := json.Unmarshal(raw, &doc); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		artifact, _ := doc["artifact"].(map[string]any)
		id, _ := artifact["id"].(string)
		if id == "" {
			http.Error(w, "no artifact.id", http.StatusBadRequest)
			return
		}
		if err := e.rdb.Set(r.Context(), prefix+":floor:"+id, raw, 0).Err(); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusAccepted)
		fmt.Fprintf(w, `{"id":%q,"status":"pending"}`, id)
	}))
}

// client is the load generator's HTTP client: keep-alive connections enough
// for any concurrency used here.
func newClient() *http.Client {
	return &http.Client{Transport: &http.Transport{
		MaxIdleConns: 4096, MaxIdleConnsPerHost: 4096, IdleConnTimeout: time.Minute,
	}, Timeout: time.Minute}
}

// post sends one intake request; nil when it was accepted (202).
func post(c *http.Client, url string, body []byte) error {
	req, err := http.NewRequest(http.MethodPost, url+"/v1/requests", bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+benchToken)
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		return fmt.Errorf("POST: %d %s", resp.StatusCode, strings.TrimSpace(string(b)))
	}
	return nil
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func bgctx() context.Context { return context.Background() }

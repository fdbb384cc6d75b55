// Package memredis is an in-process Redis (miniredis) whose keys expire on a
// clock, for local mode (internal/localmode) and for tests
// (store/redistest). It lives under internal/ so no production package
// depends on miniredis: the release binary, built with -tags nolocal, has
// none of it (see cmd/approvalbot/nolocal.go).
package memredis

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
)

// Server is an in-process Redis (miniredis) for local mode and tests. Left
// to itself miniredis never counts TTLs down, so a key set with PX or EXPIRE
// (the channel pacing slot, Slack event de-duplication, Home-opened marks,
// answered lists) would live forever and, for pacing, block its channel for
// good. Server drives miniredis from a clock instead: before every command
// one of its clients sends, the server's time is moved to the clock's, which
// counts every TTL down by the time elapsed and keeps TIME and (P)EXPIREAT
// coherent with the same clock. Keys therefore expire as they would in Redis,
// measured on the clock the rest of the process uses (a test's fake clock
// included).
//
// Only clients from Client follow the clock: a client connected to Addr by
// other means sees the time of the last command a Client sent.
type Server struct {
	srv *miniredis.Miniredis
	now func() time.Time

	mu     sync.Mutex
	synced time.Time // the latest time given to srv; it never goes back
}

// Start starts an in-process Redis on a free loopback port whose keys
// expire on the clock now (nil means time.Now). Close stops it.
func Start(now func() time.Time) (*Server, error) {
	if now == nil {
		now = time.Now
	}
	srv := miniredis.NewMiniRedis()
	if err := srv.Start(); err != nil {
		return nil, fmt.Errorf("memredis: start embedded redis: %w", err)
	}
	e := &Server{srv: srv, now: now, synced: now().Truncate(time.Millisecond)}
	srv.SetTime(e.synced)
	// From here on each command advances TTLs by the server time elapsed
	// since the previous one; sync sets that time.
	srv.ClockTTL(true)
	return e, nil
}

// Addr is the host:port the server listens on.
func (e *Server) Addr() string { return e.srv.Addr() }

// Client returns a new client of the embedded server that moves the
// server's time to the clock before each command and pipeline. The caller
// closes it (before Close).
func (e *Server) Client() *redis.Client {
	rdb := redis.NewClient(&redis.Options{Addr: e.srv.Addr()})
	rdb.AddHook(clockHook{e})
	return rdb
}

// Close stops the embedded server; everything in it is lost.
func (e *Server) Close() { e.srv.Close() }

// sync gives the server the clock's time, whole milliseconds (Redis's TTL
// resolution: commands within one millisecond cost no TTL sweep), never
// going back: two commands racing may read the clock in one order and get
// here in the other, and a step back would count the same interval twice.
func (e *Server) sync() {
	t := e.now().Truncate(time.Millisecond)
	e.mu.Lock()
	defer e.mu.Unlock()
	if t.After(e.synced) {
		e.synced = t
		e.srv.SetTime(t)
	}
}

// clockHook syncs the embedded server's time before every command.
type clockHook struct{ e *Server }

func (h clockHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h clockHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		h.e.sync()
		return next(ctx, cmd)
	}
}

func (h clockHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		h.e.sync()
		return next(ctx, cmds)
	}
}

var _ redis.Hook = clockHook{}

package bot

import (
	"cmp"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// Defaults of the Redis client's timeouts and of the request paths'
// deadlines, for a Config built in code (LoadConfig applies the same ones
// from the struct tags).
const (
	DefaultRedisDialTimeout    = time.Second
	DefaultRedisTimeout        = time.Second
	DefaultStoreRequestTimeout = 2 * time.Second
	// MaxStoreRequestTimeout leaves a Slack interaction's ack time to travel
	// within Slack's 3-second deadline.
	MaxStoreRequestTimeout = 2500 * time.Millisecond
	// maxReadinessTimeout keeps /readyz's answer within a second.
	maxReadinessTimeout = 800 * time.Millisecond
	// redisMaxRetries: one retry covers a connection dropped by a failover;
	// go-redis's default (3, with backoff) multiplies every timeout by four.
	redisMaxRetries = 1
)

// RedisOptions are the options of every Redis client the bot builds from
// REDIS_URL (OpenRedis; a Sentinel or Cluster client takes the same ones).
// Every wait is bounded: a frozen Redis (a slow fork, a failover, a
// partition) fails a command after REDIS_TIMEOUT (one retry: twice that),
// never after go-redis's defaults (5s dial with 5 dial attempts, 3s read and
// write, 3 retries with backoff), and a caller's context deadline cuts any
// command short (ContextTimeoutEnabled), which is how the request paths
// keep their STORE_REQUEST_TIMEOUT.
func (c Config) RedisOptions() (*redis.UniversalOptions, error) {
	opts, err := redis.ParseURL(c.RedisURL)
	if err != nil {
		return nil, fmt.Errorf("parse REDIS_URL: %w", err)
	}
	timeout := cmp.Or(c.RedisTimeout, DefaultRedisTimeout)
	return &redis.UniversalOptions{
		Addrs: []string{opts.Addr}, DB: opts.DB, Username: opts.Username, Password: opts.Password,
		TLSConfig: opts.TLSConfig,

		DialTimeout:           cmp.Or(c.RedisDialTimeout, DefaultRedisDialTimeout),
		DialerRetries:         1,
		ReadTimeout:           timeout,
		WriteTimeout:          timeout,
		PoolTimeout:           timeout,
		ContextTimeoutEnabled: true,
		MaxRetries:            redisMaxRetries,
		MinRetryBackoff:       10 * time.Millisecond,
		MaxRetryBackoff:       100 * time.Millisecond,
	}, nil
}

// storeRequestTimeout is STORE_REQUEST_TIMEOUT, or its default.
func (c Config) storeRequestTimeout() time.Duration {
	return cmp.Or(c.StoreRequestTimeout, DefaultStoreRequestTimeout)
}

// readinessTimeout bounds /readyz's ping of Redis: REDIS_TIMEOUT, at most
// 800ms, so the probe answers within a second when Redis does not.
func (c Config) readinessTimeout() time.Duration {
	return min(cmp.Or(c.RedisTimeout, DefaultRedisTimeout), maxReadinessTimeout)
}

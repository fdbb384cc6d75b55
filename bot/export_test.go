package bot

import (
	"errors"

	"github.com/redis/go-redis/v9"
)

// NodeClientOptions are the options of the single-node client OpenRedis
// builds for cfg's redis:// REDIS_URL, timeouts applied.
func NodeClientOptions(cfg Config) (*redis.Options, error) {
	t, err := parseRedisURL(cfg.RedisURL)
	if err != nil {
		return nil, err
	}
	if t.kind != redisNode {
		return nil, errors.New("not a redis:// URL")
	}
	t.bound(cfg.redisTimeouts())
	return t.node, nil
}

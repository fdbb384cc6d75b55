package bot

import (
	"cmp"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"strings"
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

// redisTimeouts bounds every wait of a Redis client, whichever deployment
// it talks to: a frozen Redis (a slow fork, a failover, a partition) fails a
// command after REDIS_TIMEOUT (one retry: twice that), never after
// go-redis's defaults (5s dial with 5 dial attempts, 3s read and write, 3
// retries with backoff), and a caller's context deadline cuts any command
// short (ContextTimeoutEnabled), which is how the request paths keep their
// STORE_REQUEST_TIMEOUT. A timeout given as a REDIS_URL query parameter
// (dial_timeout=…, read_timeout=…) wins over these.
type redisTimeouts struct {
	dial, io time.Duration
}

func (c Config) redisTimeouts() redisTimeouts {
	return redisTimeouts{dial: cmp.Or(c.RedisDialTimeout, DefaultRedisDialTimeout), io: cmp.Or(c.RedisTimeout, DefaultRedisTimeout)}
}

// apply sets the bounds on one client's options, keeping what the URL set.
func (rt redisTimeouts) apply(dial, read, write, pool *time.Duration, dialerRetries, maxRetries *int,
	minBackoff, maxBackoff *time.Duration, contextTimeout *bool) {
	*dial = cmp.Or(*dial, rt.dial)
	*read = cmp.Or(*read, rt.io)
	*write = cmp.Or(*write, rt.io)
	*pool = cmp.Or(*pool, rt.io)
	*dialerRetries = cmp.Or(*dialerRetries, 1)
	*maxRetries = cmp.Or(*maxRetries, redisMaxRetries)
	*minBackoff = cmp.Or(*minBackoff, 10*time.Millisecond)
	*maxBackoff = cmp.Or(*maxBackoff, 100*time.Millisecond)
	*contextTimeout = true
}

// bound applies rt to whichever client t builds.
func (t *redisTarget) bound(rt redisTimeouts) {
	switch t.kind {
	case redisCluster:
		o := t.cluster
		rt.apply(&o.DialTimeout, &o.ReadTimeout, &o.WriteTimeout, &o.PoolTimeout, &o.DialerRetries, &o.MaxRetries,
			&o.MinRetryBackoff, &o.MaxRetryBackoff, &o.ContextTimeoutEnabled)
	case redisSentinel:
		o := t.failover
		rt.apply(&o.DialTimeout, &o.ReadTimeout, &o.WriteTimeout, &o.PoolTimeout, &o.DialerRetries, &o.MaxRetries,
			&o.MinRetryBackoff, &o.MaxRetryBackoff, &o.ContextTimeoutEnabled)
	default:
		o := t.node
		rt.apply(&o.DialTimeout, &o.ReadTimeout, &o.WriteTimeout, &o.PoolTimeout, &o.DialerRetries, &o.MaxRetries,
			&o.MinRetryBackoff, &o.MaxRetryBackoff, &o.ContextTimeoutEnabled)
	}
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

// REDIS_URL names one of three deployments; each gets the go-redis client
// made for it, all used through redis.UniversalClient:
//
//	redis://[user:password@]host:port/db                  one node           *redis.Client
//	redis+cluster://[user:password@]h1:p1,h2:p2/          a Redis Cluster    *redis.ClusterClient
//	redis+sentinel://[user:password@]s1:p1,s2:p2/master/db a master behind Sentinel (NewFailoverClient)
//
// with rediss… for TLS. Query parameters are go-redis's option names
// (dial_timeout=3s, pool_size=20, …), checked by its own parsers
// (redis.ParseURL, ParseClusterURL, ParseFailoverURL); those take one host
// and further ones as ?addr=, so the host list is rewritten into that form.
// In the Sentinel form user:password are the master's (the data's)
// credentials, and the Sentinels' own, if they have any, are the
// sentinel_username and sentinel_password parameters.

// Redis deployment kinds, as REDIS_URL's scheme names them.
const (
	redisNode     = "node"
	redisCluster  = "cluster"
	redisSentinel = "sentinel"
)

// redisTarget is a parsed REDIS_URL: exactly one of the options is set.
type redisTarget struct {
	kind     string
	node     *redis.Options
	cluster  *redis.ClusterOptions
	failover *redis.FailoverOptions
}

// parseRedisURL parses REDIS_URL. Its errors never repeat the URL, which
// may hold a password.
func parseRedisURL(raw string) (redisTarget, error) {
	scheme, rest, ok := strings.Cut(raw, "://")
	if !ok {
		return redisTarget{}, errors.New("no scheme: want redis://, rediss://, redis+cluster:// or redis+sentinel://")
	}
	base, kind, _ := strings.Cut(scheme, "+")
	if base != "redis" && base != "rediss" {
		return redisTarget{}, fmt.Errorf("scheme %q: want redis://, rediss://, redis+cluster:// or redis+sentinel:// (rediss… for TLS)", scheme)
	}
	switch kind {
	case "":
		o, err := redis.ParseURL(raw)
		if err != nil {
			return redisTarget{}, redact(err)
		}
		return redisTarget{kind: redisNode, node: o}, nil
	case redisCluster:
		return parseClusterURL(base, rest)
	case redisSentinel:
		return parseSentinelURL(base, rest)
	}
	return redisTarget{}, fmt.Errorf("scheme %q: want redis+cluster or redis+sentinel after the +", scheme)
}

// hostList is the parts of a URL whose host is a comma-separated list.
type hostList struct {
	userinfo string // as written (still escaped), without the @
	hosts    []string
	path     string
	query    url.Values
}

func splitHostList(rest, defaultPort string) (hostList, error) {
	var hl hostList
	authority, tail := rest, ""
	if i := strings.IndexAny(rest, "/?"); i >= 0 {
		authority, tail = rest[:i], rest[i:]
	}
	if i := strings.LastIndexByte(authority, '@'); i >= 0 {
		hl.userinfo, authority = authority[:i], authority[i+1:]
	}
	for h := range strings.SplitSeq(authority, ",") {
		if h == "" {
			return hl, errors.New("empty host in the host list (want host1:port1,host2:port2)")
		}
		if _, _, err := net.SplitHostPort(h); err != nil {
			h = net.JoinHostPort(strings.Trim(h, "[]"), defaultPort)
		}
		if host, port, err := net.SplitHostPort(h); err != nil || host == "" || port == "" {
			return hl, fmt.Errorf("host %q: want host:port", h)
		}
		hl.hosts = append(hl.hosts, h)
	}
	hl.path, tail, _ = strings.Cut(tail, "?")
	var err error
	if hl.query, err = url.ParseQuery(tail); err != nil {
		return hl, fmt.Errorf("query: %w", redact(err))
	}
	return hl, nil
}

// url writes hl as the one-host URL go-redis's parsers take: the first host
// in the authority, the others as addr parameters.
func (hl hostList) url(scheme, userinfo, path string, q url.Values) string {
	for _, h := range hl.hosts[1:] {
		q.Add("addr", h)
	}
	if userinfo != "" {
		userinfo += "@"
	}
	return scheme + "://" + userinfo + hl.hosts[0] + path + "?" + q.Encode()
}

func parseClusterURL(scheme, rest string) (redisTarget, error) {
	hl, err := splitHostList(rest, "6379")
	if err != nil {
		return redisTarget{}, err
	}
	if hl.path != "" && hl.path != "/" {
		return redisTarget{}, errors.New("a Redis Cluster has only database 0: end the host list with / and no path")
	}
	if hl.query.Has("addr") {
		return redisTarget{}, errors.New("list every node in the host list, not as addr parameters")
	}
	o, err := redis.ParseClusterURL(hl.url(scheme, hl.userinfo, "", hl.query))
	if err != nil {
		return redisTarget{}, redact(err)
	}
	clearServerName(o.TLSConfig)
	return redisTarget{kind: redisCluster, cluster: o}, nil
}

func parseSentinelURL(scheme, rest string) (redisTarget, error) {
	hl, err := splitHostList(rest, "26379")
	if err != nil {
		return redisTarget{}, err
	}
	parts := strings.Split(strings.Trim(hl.path, "/"), "/")
	if parts[0] == "" || len(parts) > 2 {
		return redisTarget{}, errors.New("path: want /<master name> or /<master name>/<db> after the Sentinels")
	}
	for _, p := range []string{"addr", "master_name", "username", "password"} {
		if hl.query.Has(p) {
			return redisTarget{}, fmt.Errorf("parameter %s: give it in the URL itself (Sentinels in the host list, "+
				"the master's name in the path, its credentials as user:password@)", p)
		}
	}
	q := hl.query
	master, err := url.PathUnescape(parts[0])
	if err != nil {
		return redisTarget{}, errors.New("path: the master name is not a valid escaped path segment")
	}
	q.Set("master_name", master)
	// user:password@ are the master's; go-redis reads the URL's userinfo as
	// the Sentinels' and the master's from parameters, so swap them.
	if hl.userinfo != "" {
		u, err := url.Parse("redis://" + hl.userinfo + "@x")
		if err != nil {
			return redisTarget{}, errors.New("user:password@ is not valid (escape special characters with %XX)")
		}
		q.Set("username", u.User.Username())
		pw, _ := u.User.Password()
		q.Set("password", pw)
	}
	var sentinelAuth string
	if su, sp := q.Get("sentinel_username"), q.Get("sentinel_password"); su != "" || sp != "" {
		sentinelAuth = url.UserPassword(su, sp).String()
	}
	q.Del("sentinel_username")
	q.Del("sentinel_password")
	db := ""
	if len(parts) == 2 {
		db = "/" + parts[1]
	}
	o, err := redis.ParseFailoverURL(hl.url(scheme, sentinelAuth, db, q))
	if err != nil {
		return redisTarget{}, redact(err)
	}
	clearServerName(o.TLSConfig)
	return redisTarget{kind: redisSentinel, failover: o}, nil
}

// clearServerName drops the server name go-redis's parsers take from the
// URL's first host: with several nodes (and a master Sentinel names) that
// name is wrong for all the others. Without it each TLS connection checks
// the certificate against the address it dials.
func clearServerName(c *tls.Config) {
	if c != nil {
		c.ServerName = ""
	}
}

// redact drops the URL from url.Parse's errors: it may hold a password.
func redact(err error) error {
	if ue, ok := errors.AsType[*url.Error](err); ok {
		return ue.Err
	}
	return err
}

// newClient builds the client of t's deployment.
func (t redisTarget) newClient() redis.UniversalClient {
	switch t.kind {
	case redisCluster:
		return redis.NewClusterClient(t.cluster)
	case redisSentinel:
		return redis.NewFailoverClient(t.failover)
	}
	return redis.NewClient(t.node)
}

// logAttrs says where t points, without credentials.
func (t redisTarget) logAttrs() []any {
	switch t.kind {
	case redisCluster:
		return []any{"mode", t.kind, "addrs", t.cluster.Addrs}
	case redisSentinel:
		return []any{"mode", t.kind, "sentinels", t.failover.SentinelAddrs, "master", t.failover.MasterName, "db", t.failover.DB}
	}
	return []any{"mode", t.kind, "addr", t.node.Addr, "db", t.node.DB}
}

// errClusterNode is OpenRedis's refusal of a redis:// URL that names one
// node of a Redis Cluster.
var errClusterNode = errors.New("REDIS_URL names one node of a Redis Cluster, as redis://: a single-node client " +
	"cannot follow the Cluster's MOVED redirections, so requests in other nodes' slots would fail; " +
	"list the Cluster's nodes as REDIS_URL=redis+cluster://host1:port1,host2:port2/")

// checkNotClusterNode refuses a Cluster node reached through a single-node
// client. CLUSTER INFO answers on a Cluster node and fails with "cluster
// support disabled" elsewhere; any other failure (a Redis whose ACL or
// provider forbids CLUSTER) cannot tell, so it is logged, not refused.
func checkNotClusterNode(ctx context.Context, rdb redis.UniversalClient, log *slog.Logger) error {
	info, err := rdb.ClusterInfo(ctx).Result()
	switch {
	case err == nil:
		state := "cluster_state unknown"
		for line := range strings.Lines(info) {
			if strings.HasPrefix(line, "cluster_state:") {
				state = strings.TrimSpace(line)
			}
		}
		return fmt.Errorf("%w (CLUSTER INFO: %s)", errClusterNode, state)
	case strings.Contains(err.Error(), "cluster support disabled"):
		return nil
	default:
		log.WarnContext(ctx, "could not check that REDIS_URL is not a Redis Cluster node (with a Cluster, use redis+cluster://)",
			"err", err)
		return nil
	}
}

// OpenRedis connects to REDIS_URL: one node, a Redis Cluster or a master
// behind Sentinel (see the top of this file), and refuses a Cluster node
// named as a single node. The embedded in-memory store that an unset
// REDIS_URL or REDIS_URL=memory:// asks for is local tooling, not here:
// internal/localmode starts it, in builds that carry local mode (see
// cmd/approvalbot). The returned func releases the connection.
func OpenRedis(ctx context.Context, cfg Config, log *slog.Logger) (redis.UniversalClient, func(), error) {
	if cfg.EmbeddedRedis() {
		return nil, nil, fmt.Errorf("REDIS_URL=%q asks for the embedded in-memory store, which only local mode "+
			"(internal/localmode) starts: set REDIS_URL=redis://host:port/0", cfg.RedisURL)
	}
	t, err := parseRedisURL(cfg.RedisURL)
	if err != nil {
		return nil, nil, fmt.Errorf("parse REDIS_URL: %w", err)
	}
	t.bound(cfg.redisTimeouts())
	rdb := t.newClient()
	// Bounded so that an unreachable Redis fails the start instead of
	// hanging it; a Sentinel client asks the Sentinels for the master first.
	checkCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := rdb.Ping(checkCtx).Err(); err != nil {
		_ = rdb.Close()
		return nil, nil, fmt.Errorf("connect to redis (%s): %w", t, err)
	}
	if t.kind == redisNode {
		if err := checkNotClusterNode(checkCtx, rdb, log); err != nil {
			_ = rdb.Close()
			return nil, nil, err
		}
	}
	log.InfoContext(ctx, "connected to redis", t.logAttrs()...)
	return rdb, func() { _ = rdb.Close() }, nil
}

// String says where t points, without credentials, for errors.
func (t redisTarget) String() string {
	switch t.kind {
	case redisCluster:
		return "cluster " + strings.Join(t.cluster.Addrs, ",")
	case redisSentinel:
		return fmt.Sprintf("master %q of sentinels %s", t.failover.MasterName, strings.Join(t.failover.SentinelAddrs, ","))
	}
	return "node " + t.node.Addr
}

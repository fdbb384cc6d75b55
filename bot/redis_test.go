package bot

import (
	"io"
	"log/slog"
	"slices"
	"strings"
	"testing"

	"github.com/approvalbot/approvalbot/store/redistest"
	"github.com/redis/go-redis/v9"
)

// Each REDIS_URL form builds the options of its deployment's client, with
// go-redis's own parsers reading the parameters.
func TestParseRedisURL(t *testing.T) {
	t.Parallel()
	t.Run("node", func(t *testing.T) {
		r, err := parseRedisURL("redis://u:p%40ss@10.0.0.1:6380/2?dial_timeout=3s")
		if err != nil {
			t.Fatal(err)
		}
		o := r.node
		if r.kind != redisNode || o.Addr != "10.0.0.1:6380" || o.DB != 2 || o.Username != "u" || o.Password != "p@ss" ||
			o.DialTimeout.String() != "3s" {
			t.Errorf("node = %s %+v", r.kind, o)
		}
	})
	t.Run("cluster", func(t *testing.T) {
		r, err := parseRedisURL("rediss+cluster://u:pw@a.example:7000,b.example:7001,[::1]:7002,c.example/?pool_size=7")
		if err != nil {
			t.Fatal(err)
		}
		o := r.cluster
		want := []string{"a.example:7000", "b.example:7001", "[::1]:7002", "c.example:6379"}
		if r.kind != redisCluster || !slices.Equal(o.Addrs, want) || o.Username != "u" || o.Password != "pw" || o.PoolSize != 7 {
			t.Errorf("cluster = %s %+v", r.kind, o)
		}
		// Each node's certificate is checked against the address dialed,
		// not all against the first host's name.
		if o.TLSConfig == nil || o.TLSConfig.ServerName != "" {
			t.Errorf("TLS config = %+v; want TLS with no fixed server name", o.TLSConfig)
		}
		if r, err := parseRedisURL("redis+cluster://127.0.0.1:7000"); err != nil || r.cluster.TLSConfig != nil {
			t.Errorf("without a trailing slash: %v %+v", err, r)
		}
	})
	t.Run("sentinel", func(t *testing.T) {
		r, err := parseRedisURL("redis+sentinel://app:secret@s1:26379,s2:26380,s3/mymaster/3?sentinel_password=sp&read_timeout=2s")
		if err != nil {
			t.Fatal(err)
		}
		o := r.failover
		want := []string{"s1:26379", "s2:26380", "s3:26379"}
		if r.kind != redisSentinel || !slices.Equal(o.SentinelAddrs, want) || o.MasterName != "mymaster" || o.DB != 3 ||
			o.Username != "app" || o.Password != "secret" || o.SentinelPassword != "sp" || o.SentinelUsername != "" ||
			o.ReadTimeout.String() != "2s" {
			t.Errorf("sentinel = %s %+v", r.kind, o)
		}
		if r, err := parseRedisURL("redis+sentinel://s1/mymaster"); err != nil || r.failover.DB != 0 || r.failover.Password != "" {
			t.Errorf("without db and credentials: %v %+v", err, r)
		}
	})
	for raw, want := range map[string]string{
		"http://h:1/0":                            "scheme",
		"redis+shard://h:1/":                      "redis+cluster or redis+sentinel",
		"h:6379":                                  "no scheme",
		"redis+cluster://h:1,,h:2/":               "empty host",
		"redis+cluster://h:1,h:2/3":               "only database 0",
		"redis+cluster://h:1/?addr=h:2":           "host list",
		"redis+cluster://h:1/?pool_sise=3":        "pool_sise",
		"redis+sentinel://s:1":                    "master name",
		"redis+sentinel://s:1/m/0/x":              "master name",
		"redis+sentinel://s:1/m/zero":             "database",
		"redis+sentinel://s:1/m?password=x":       "password",
		"redis://u:hunter2@h:1/x":                 "database",
		"redis://u:hunter2@h:notaport/0":          "port",
		"redis+sentinel://u:hunter2@s:1/m/0?x=%z": "query",
	} {
		_, err := parseRedisURL(raw)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: err = %v; want it to mention %q", raw, err, want)
		}
		if err != nil && strings.Contains(err.Error(), "hunter2") {
			t.Errorf("%s: the error leaks the password: %v", raw, err)
		}
	}
}

// OpenRedis connects to the test Redis, whichever kind it is: on the
// Cluster (REDIS_CLUSTER_ADDRS) through redis+cluster://.
func TestOpenRedis(t *testing.T) {
	t.Parallel()
	if redistest.Kind() == "miniredis" {
		t.Skip("needs a real Redis")
	}
	rdb, closeRedis, err := OpenRedis(t.Context(), Config{RedisURL: redistest.URL(t)}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer closeRedis()
	_, isCluster := rdb.(*redis.ClusterClient)
	if isCluster != redistest.Cluster() {
		t.Errorf("client %T for %s", rdb, redistest.Kind())
	}
}

// A Cluster node named as a single node (redis://) is refused at start,
// saying to use redis+cluster://: a single-node client cannot follow MOVED.
func TestOpenRedisRefusesClusterNodeAsSingleNode(t *testing.T) {
	t.Parallel()
	node := redistest.StartServer(t, "", "--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf")
	// A Cluster of this one node, serving every slot.
	admin := redis.NewClient(&redis.Options{Addr: node.Addr})
	defer admin.Close()
	if err := admin.ClusterAddSlotsRange(t.Context(), 0, 16383).Err(); err != nil {
		t.Fatal(err)
	}
	_, _, err := OpenRedis(t.Context(), Config{RedisURL: "redis://" + node.Addr + "/0"}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err == nil || !strings.Contains(err.Error(), "redis+cluster://") || !strings.Contains(err.Error(), "cluster_state:") {
		t.Errorf("cluster node as redis://: err = %v; want a refusal naming redis+cluster:// and the cluster state", err)
	}
	// The same node as a Cluster is accepted.
	rdb, closeRedis, err := OpenRedis(t.Context(), Config{RedisURL: "redis+cluster://" + node.Addr + "/"}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatalf("cluster node as redis+cluster://: %v", err)
	}
	defer closeRedis()
	if _, ok := rdb.(*redis.ClusterClient); !ok {
		t.Errorf("client %T; want a *redis.ClusterClient", rdb)
	}
}

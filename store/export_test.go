package store

import (
	"context"

	"github.com/redis/go-redis/v9"
)

// WithFields sets raw request hash fields on ch, for tests that need a
// record in a state only a long history reaches (a delivery on its last
// retry). Production code says what changes with Change's typed fields.
func (ch *Change) WithFields(set map[string]any) *Change {
	ch.set = set
	return ch
}

// OpenCounted lists the members of agent's open-request count with their
// scores, for tests that check what the count holds.
func (s *Store) OpenCounted(ctx context.Context, agent string) (map[string]float64, error) {
	zs, err := s.rdb.ZRangeWithScores(ctx, s.keys.openCount(agent), 0, -1).Result()
	if err != nil {
		return nil, err
	}
	out := make(map[string]float64, len(zs))
	for _, z := range zs {
		out[z.Member.(string)] = z.Score
	}
	return out, nil
}

// OpenConfirmed is the least score of a confirmed member of an open-request count.
const OpenConfirmed = openConfirmed

// Prefix is the store's key prefix, and Client its Redis client: a test
// builds another process's store over the same key space with them.
func (s *Store) Prefix() string { return s.keys.prefix }

func (s *Store) Client() redis.UniversalClient { return s.rdb }

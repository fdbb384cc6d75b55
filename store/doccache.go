package store

import (
	"context"
	"sync"

	"github.com/approvalbot/approvalbot/aah"
)

// docCacheSize bounds the parsed documents a Store keeps for LoadShared: a
// burst into one channel has each waiting post come back once or twice.
const docCacheSize = 4096

// docCache keeps the parsed documents of recently loaded requests by id and
// body hash (the version where a record has no hash): the document is
// written once, at intake, so the runs of one request's jobs (a post
// waiting for its turn, then its syncs) parse it once. The oldest entry
// goes first.
type docCache struct {
	mu    sync.Mutex
	docs  map[docKey]*aah.Request
	order []docKey // insertion order, for eviction
	max   int
}

type docKey struct {
	id, hash string
	version  int64
}

func newDocCache(max int) *docCache {
	return &docCache{docs: make(map[docKey]*aah.Request), max: max}
}

func (c *docCache) get(k docKey) (*aah.Request, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	req, ok := c.docs[k]
	return req, ok
}

func (c *docCache) put(k docKey, req *aah.Request) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.docs[k]; ok {
		return
	}
	if len(c.order) >= c.max {
		delete(c.docs, c.order[0])
		c.order = c.order[1:]
	}
	c.docs[k] = req
	c.order = append(c.order, k)
}

// LoadShared is Load for a reader that only reads the parsed document: the
// same *aah.Request is returned to every caller that loads the same
// version of the request in this process, parsed once. It must not be
// modified.
func (s *Store) LoadShared(ctx context.Context, id string) (Record, *aah.Request, error) {
	rec, err := s.Get(ctx, id)
	if err != nil {
		return Record{}, nil, err
	}
	k := docKey{id: id, hash: rec.BodyHash}
	if k.hash == "" {
		k.version = rec.Version
	}
	if req, ok := s.docs.get(k); ok {
		return rec, req, nil
	}
	req, err := rec.Request()
	if err != nil {
		return rec, nil, err
	}
	s.docs.put(k, req)
	return rec, req, nil
}

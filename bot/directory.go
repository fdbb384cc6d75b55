package bot

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/slack-go/slack"
)

// DirectoryAPI is what the directory asks Slack; *slack.Client implements it.
type DirectoryAPI interface {
	GetUserByEmailContext(ctx context.Context, email string) (*slack.User, error)
	GetUserGroupMembersContext(ctx context.Context, userGroup string, options ...slack.GetUserGroupMembersOption) ([]string, error)
	GetUserInfoContext(ctx context.Context, user string, options ...slack.GetUserInfoOption) (*slack.User, error)
}

// Directory answers the decider's questions about Slack: which user an
// email address belongs to, and who is in a user group. Each answer is
// cached for a short time: authorization runs on every click and must answer
// within Slack's 3 s, while membership changes in Slack should take effect
// within minutes. Concurrent misses for the same key share one Slack call
// (a burst of clicks on a new request must not spend the rate limit), and
// failed lookups are not cached. Each process has its own cache.
type Directory struct {
	api     DirectoryAPI
	ttl     time.Duration
	timeout time.Duration
	now     func() time.Time
	lookups *prometheus.CounterVec

	mu       sync.Mutex
	entries  map[string]cached // "email:<address>", "group:S…" or "name:U…"
	inflight map[string]*lookup
}

type cached struct {
	userID  string // the user of an email; the name of a user
	members []string
	expires time.Time
}

// lookup is one Slack call that concurrent misses wait for.
type lookup struct {
	done chan struct{}
	val  cached
	err  error
}

// maxDirectoryEntries bounds the cache; past it, it starts over.
const maxDirectoryEntries = 20000

// NewDirectory returns a directory over api whose answers live for ttl.
// reg may be nil (no metrics).
func NewDirectory(api DirectoryAPI, ttl time.Duration, reg prometheus.Registerer) *Directory {
	d := &Directory{api: api, ttl: ttl, timeout: 2 * time.Second, now: time.Now,
		entries: map[string]cached{}, inflight: map[string]*lookup{},
		lookups: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "approvalbot_directory_lookups_total",
			Help: "Directory lookups of users by email, user group members and (for the decision API) user names, by kind and result (hit, miss, error).",
		}, []string{"kind", "result"})}
	if reg != nil {
		reg.MustRegister(d.lookups)
	}
	return d
}

// UserIDByEmail is the Slack user with that email address, or "" when Slack
// knows none (users_not_found).
func (d *Directory) UserIDByEmail(ctx context.Context, email string) (string, error) {
	e, err := d.get(ctx, "email", email, func(ctx context.Context) (cached, error) {
		u, err := d.api.GetUserByEmailContext(ctx, email)
		var apiErr slack.SlackErrorResponse
		switch {
		case errors.As(err, &apiErr) && apiErr.Err == "users_not_found":
			return cached{}, nil
		case err != nil:
			return cached{}, fmt.Errorf("users.lookupByEmail: %w", err)
		}
		return cached{userID: u.ID}, nil
	})
	return e.userID, err
}

// GroupMembers are the user ids of the group's members.
func (d *Directory) GroupMembers(ctx context.Context, groupID string) ([]string, error) {
	e, err := d.get(ctx, "group", groupID, func(ctx context.Context) (cached, error) {
		members, err := d.api.GetUserGroupMembersContext(ctx, groupID)
		if err != nil {
			return cached{}, fmt.Errorf("usergroups.users.list %s: %w", groupID, err)
		}
		return cached{members: members}, nil
	})
	return e.members, err
}

// UserName is the name a Slack user's answers are recorded with, as seed
// 000's responses name people ("agent_name": "Gracie Redfern"): their real
// name, else their display name, else (neither set) their handle. Clicks
// and the decision API both look it up here: a click's payload carries
// only the handle, the API only the user id of a reviewer token.
func (d *Directory) UserName(ctx context.Context, userID string) (string, error) {
	e, err := d.get(ctx, "name", userID, func(ctx context.Context) (cached, error) {
		u, err := d.api.GetUserInfoContext(ctx, userID)
		if err != nil {
			return cached{}, fmt.Errorf("users.info %s: %w", userID, err)
		}
		return cached{userID: personName(u)}, nil
	})
	return e.userID, err
}

// personName is the name UserName records a user by.
func personName(u *slack.User) string {
	for _, name := range []string{u.RealName, u.Profile.RealName, u.Profile.DisplayName, u.Name} {
		if name = strings.TrimSpace(name); name != "" {
			return name
		}
	}
	return u.ID
}

func (d *Directory) get(ctx context.Context, kind, id string, fetch func(context.Context) (cached, error)) (cached, error) {
	key := kind + ":" + id
	d.mu.Lock()
	if e, ok := d.entries[key]; ok && d.now().Before(e.expires) {
		d.mu.Unlock()
		d.lookups.WithLabelValues(kind, "hit").Inc()
		return e, nil
	}
	l, waiting := d.inflight[key]
	if !waiting {
		l = &lookup{done: make(chan struct{})}
		d.inflight[key] = l
	}
	d.mu.Unlock()
	if waiting {
		select {
		case <-l.done:
			return l.val, l.err
		case <-ctx.Done():
			return cached{}, fmt.Errorf("wait for a Slack lookup of %s: %w", key, ctx.Err())
		}
	}
	// The call outlives a caller that gives up, so the others waiting on it
	// still get its answer; it is bounded by its own timeout.
	fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), d.timeout)
	defer cancel()
	l.val, l.err = fetch(fctx)
	d.mu.Lock()
	delete(d.inflight, key)
	if l.err == nil {
		l.val.expires = d.now().Add(d.ttl)
		if len(d.entries) >= maxDirectoryEntries {
			d.entries = map[string]cached{}
		}
		d.entries[key] = l.val
	}
	d.mu.Unlock()
	close(l.done)
	if l.err != nil {
		d.lookups.WithLabelValues(kind, "error").Inc()
		return cached{}, l.err
	}
	d.lookups.WithLabelValues(kind, "miss").Inc()
	return l.val, nil
}

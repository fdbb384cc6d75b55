package bot

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/slack-go/slack"
)

// DirectoryAPI is what the directory asks Slack; *slack.Client implements it.
type DirectoryAPI interface {
	GetUserInfoContext(ctx context.Context, user string, options ...slack.GetUserInfoOption) (*slack.User, error)
	GetUserGroupMembersContext(ctx context.Context, userGroup string, options ...slack.GetUserGroupMembersOption) ([]string, error)
}

// Directory answers the decider's questions about Slack users (their email)
// and user groups (their members), caching each answer for a short time:
// authorization runs on every click and must answer within Slack's 3 s,
// while membership changes in Slack should take effect within minutes.
// Failed lookups are not cached. Each process has its own cache.
type Directory struct {
	api     DirectoryAPI
	ttl     time.Duration
	timeout time.Duration
	now     func() time.Time
	lookups *prometheus.CounterVec

	mu      sync.Mutex
	entries map[string]cached // "user:U…" or "group:S…"
}

type cached struct {
	email   string
	members []string
	expires time.Time
}

// maxDirectoryEntries bounds the cache; past it, it starts over.
const maxDirectoryEntries = 20000

// NewDirectory returns a directory over api whose answers live for ttl.
// reg may be nil (no metrics).
func NewDirectory(api DirectoryAPI, ttl time.Duration, reg prometheus.Registerer) *Directory {
	d := &Directory{api: api, ttl: ttl, timeout: 2 * time.Second, now: time.Now, entries: map[string]cached{},
		lookups: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "approvalbot_directory_lookups_total",
			Help: "Authorization lookups of users' emails and user group members, by kind and result (hit, miss, error).",
		}, []string{"kind", "result"})}
	if reg != nil {
		reg.MustRegister(d.lookups)
	}
	return d
}

// UserEmail is the user's email address ("" when Slack shows none, e.g.
// without the users:read.email scope).
func (d *Directory) UserEmail(ctx context.Context, userID string) (string, error) {
	e, err := d.get(ctx, "user", userID, func(ctx context.Context) (cached, error) {
		u, err := d.api.GetUserInfoContext(ctx, userID)
		if err != nil {
			return cached{}, fmt.Errorf("users.info %s: %w", userID, err)
		}
		return cached{email: u.Profile.Email}, nil
	})
	return e.email, err
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

func (d *Directory) get(ctx context.Context, kind, id string, fetch func(context.Context) (cached, error)) (cached, error) {
	key := kind + ":" + id
	now := d.now()
	d.mu.Lock()
	e, ok := d.entries[key]
	d.mu.Unlock()
	if ok && now.Before(e.expires) {
		d.lookups.WithLabelValues(kind, "hit").Inc()
		return e, nil
	}
	ctx, cancel := context.WithTimeout(ctx, d.timeout)
	defer cancel()
	e, err := fetch(ctx)
	if err != nil {
		d.lookups.WithLabelValues(kind, "error").Inc()
		return cached{}, err
	}
	d.lookups.WithLabelValues(kind, "miss").Inc()
	e.expires = now.Add(d.ttl)
	d.mu.Lock()
	if len(d.entries) >= maxDirectoryEntries {
		d.entries = map[string]cached{}
	}
	d.entries[key] = e
	d.mu.Unlock()
	return e, nil
}

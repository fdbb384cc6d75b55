package slackout

import (
	"cmp"
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/approvalbot/approvalbot/aah"
	"github.com/approvalbot/approvalbot/approval"
	"github.com/approvalbot/approvalbot/jobs"
	"github.com/approvalbot/approvalbot/store"
	"github.com/slack-go/slack"
)

// SlackAPI is the part of the Slack Web API the jobs use; *slack.Client
// implements it.
type SlackAPI interface {
	PostMessageContext(ctx context.Context, channelID string, options ...slack.MsgOption) (string, string, error)
	UpdateMessageContext(ctx context.Context, channelID, timestamp string, options ...slack.MsgOption) (string, string, string, error)
	GetPermalinkContext(ctx context.Context, params *slack.PermalinkParameters) (string, error)
	GetUserByEmailContext(ctx context.Context, email string) (*slack.User, error)
	OpenConversationContext(ctx context.Context, params *slack.OpenConversationParameters) (*slack.Channel, bool, bool, error)
	messageLookup
}

// Store is what the jobs read and write in Redis; *store.Store implements
// it.
type Store interface {
	// Load reads a request with its parsed document (store.Store.Load).
	Load(ctx context.Context, id string) (store.Record, *aah.Request, error)
	// LoadShared is Load with the parsed document shared, read-only,
	// among the readers of one version (store.Store.LoadShared).
	LoadShared(ctx context.Context, id string) (store.Record, *aah.Request, error)
	Get(ctx context.Context, id string) (store.Record, error)
	// GetState is Get without the document (store.Store.GetState).
	GetState(ctx context.Context, id string) (store.Record, error)

	// The request's own message: exactly once (store/sideeffects.go),
	// paced per channel in arrival order (store/pace.go), and kept in sync.
	BeginPost(ctx context.Context, id string, ifOpen bool) (store.Attempt, error)
	AbandonPost(ctx context.Context, id string) error
	RecordPost(ctx context.Context, id, channel, ts string, renderedVersion int64, sweepAt time.Time) error
	NoteChannelID(ctx context.Context, name, id string) error
	ChannelID(ctx context.Context, name string) (string, error)
	MarkSynced(ctx context.Context, id string, renderedVersion int64) error
	SetPermalink(ctx context.Context, id, channel, ts, link string) error
	SetMentions(ctx context.Context, id string, mentions []string, members ...string) error
	RecordPostError(ctx context.Context, id, code string, permanent bool) error
	TakePostTurn(ctx context.Context, t store.PostTurn, p store.Pacing) (store.Turn, error)
	EndPostTurn(ctx context.Context, t store.PostTurn) (next string, err error)
	PullPostJob(ctx context.Context, id string, at time.Time) error
	ReturnPostTurn(ctx context.Context, t store.PostTurn, back time.Duration) error
	LeavePostQueue(ctx context.Context, t store.PostTurn) error
	HoldChannel(ctx context.Context, channel string, d time.Duration) error

	// Reminder, escalation and requester copies, each exactly once.
	BeginCopy(ctx context.Context, id, effect string) (store.Attempt, error)
	AbandonCopy(ctx context.Context, id, effect string) error
	RecordCopy(ctx context.Context, id string, c store.Copy, sweepAt time.Time) (winner store.Copy, won bool, err error)
	Copies(ctx context.Context, id string) ([]store.CopyState, error)
	MarkCopySynced(ctx context.Context, id string, c store.Copy) error

	// Home tabs: who to publish to, coalesced, and the hold of
	// views.publish after a 429.
	HomeOpened(ctx context.Context, users []string) ([]string, error)
	ScheduleHomePublish(ctx context.Context, users []string, window time.Duration) error
	HoldMethod(ctx context.Context, method string, d time.Duration) error
	MethodHeld(ctx context.Context, method string) (time.Duration, error)
}

// Options configure the jobs.
type Options struct {
	Slack SlackAPI
	// Chat, when set, is where the request's own message is posted
	// (ChatEndpoint: the same call, a lighter read of Slack's answer); nil
	// posts it through Slack.
	Chat  *ChatEndpoint
	Store Store
	// Core records what the reminder and escalation jobs did (reminders
	// completed, recipients reached, escalation steps applied).
	Core *approval.Core
	// Directory resolves escalation targets, and the members of reviewer
	// groups and roles, filed in the reviewer index when a request is
	// posted: the cached directory authorization reads.
	Directory approval.Directory
	// Homes publishes a user's App Home tab (*handlers.Slack).
	Homes HomePublisher
	// PostInterval spaces posts to one channel (Slack allows about one
	// message per second per channel). Default 1s.
	PostInterval time.Duration
	// RateLimitHold is how long a 429 without Retry-After holds a channel
	// or a method (Slack always sends Retry-After; proxies may not).
	// Default 5s.
	RateLimitHold time.Duration
	// Lease is the job lease (JOB_LEASE): every attempt's Slack call has
	// ended one lease after it began, so a sweep is due then. Default 60s.
	Lease time.Duration
	// Defaults are the workspace's sign-off rules, shown in messages (as
	// they apply to each request's agent: Defaults.For).
	Defaults aah.Defaults
	// GrantMax is the longest standing approval a reviewer may grant
	// (STANDING_APPROVAL_MAX): messages offer "Approve similar…" when it
	// is above 0. Default: Core's GrantMax when it has one, else 0.
	GrantMax time.Duration
	// Reminders is the configured reminder plan;
	// extensions.slack.reminders overrides it (approval.ReminderPlan).
	Reminders aah.ReminderPlan
	// Now is the store's clock (sweeps are scheduled on it). Default
	// time.Now.
	Now func() time.Time
	// Wake, when set, wakes this process's job runner for request
	// requestID's jobs (jobs.Runner.WakeFor): a post ending its turn makes
	// the next post's job due and wakes it (default: the next post waits
	// for the runner's next look).
	Wake func(requestID string)
	// Metrics default to unregistered ones.
	Metrics *Metrics
	Logger  *slog.Logger
}

// Handlers returns the job handlers of everything sent to Slack, by job
// kind, for the job runner. Slack and Store are required. Without Core the
// reminder and escalation jobs are left out (escalation needs Directory
// too), and without Homes the Home publish job: a test of one job needs
// only what that job uses. Without Directory, posts file only the reviewers
// named by user id.
func Handlers(opts Options) (map[string]jobs.Handler, error) {
	if opts.Slack == nil || opts.Store == nil {
		return nil, errors.New("slackout: the jobs need a Slack client and a store")
	}
	opts.PostInterval = cmp.Or(opts.PostInterval, time.Second)
	opts.RateLimitHold = cmp.Or(opts.RateLimitHold, 5*time.Second)
	opts.Lease = cmp.Or(opts.Lease, 60*time.Second)
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if g, ok := any(opts.Core).(interface{ GrantMax() time.Duration }); ok && opts.Core != nil && opts.GrantMax == 0 {
		opts.GrantMax = g.GrantMax()
	}
	if opts.Metrics == nil {
		opts.Metrics = NewMetrics(nil)
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	p := &poster{opts: opts, log: log.With("component", "poster"), pacing: PostPacing(opts.PostInterval)}
	timers := timerDeps{store: opts.Store, core: opts.Core, dir: opts.Directory, slack: opts.Slack, now: opts.Now,
		rateLimitHold: opts.RateLimitHold, defaults: opts.Defaults, grantMax: opts.GrantMax, lease: opts.Lease, metrics: opts.Metrics}
	home := homeJob{store: opts.Store, log: log.With("component", "home")}
	if opts.Core != nil {
		home.audience = opts.Core
	}
	out := map[string]jobs.Handler{
		store.JobPost:   postJob{p},
		store.JobSync:   syncJob{p},
		store.JobSweep:  sweepJob{store: opts.Store, slack: opts.Slack, log: log.With("component", "sweep")},
		store.JobCopies: copiesJob{timers.with(log, "copies")},
		store.JobHome:   home,
	}
	if opts.Core != nil {
		out[store.JobRemind] = reminderJob{timerDeps: timers.with(log, "reminders"), plan: opts.Reminders}
		if opts.Directory != nil {
			out[store.JobEscalate] = escalationJob{timers.with(log, "escalation")}
		}
		// Without Directory, requesters named by email are audited as
		// unresolved.
		out[store.JobNotify] = notifyJob{timers.with(log, "notify")}
	}
	if opts.Homes != nil {
		out[store.JobHomePublish] = homePublishJob{store: opts.Store, homes: opts.Homes,
			rateLimitHold: opts.RateLimitHold, log: log.With("component", "home")}
	}
	return out, nil
}

package approval_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/approvalbot/approvalbot/aah"
	"github.com/approvalbot/approvalbot/aah/schema"
	"github.com/approvalbot/approvalbot/approval"
	"github.com/approvalbot/approvalbot/store"
	"github.com/approvalbot/approvalbot/store/redistest"
	"github.com/redis/go-redis/v9"
)

// The standing-approval tests run the core over the real store (the
// matching happens in its create transaction): the embedded store on a
// fake clock, which Redis's TIME follows, so expiry is exact, and real
// Redis for the races.

var (
	gt0    = time.Date(2027, 2, 16, 10, 0, 0, 0, time.UTC)
	galice = aah.Person{ID: "U0ALICE", Name: "alice"}
	gbob   = aah.Person{ID: "U0BOB", Name: "bob"}
	gcarol = aah.Person{ID: "U0CAROL", Name: "carol"}
	gadmin = aah.Person{ID: "U0ADMIN", Name: "admin"}
)

type gclock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *gclock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *gclock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// groups is the directory of the tests: S0LEADS holds Alice and Morgan.
type groups struct{}

func (groups) UserIDByEmail(context.Context, string) (string, error) { return "", nil }
func (groups) GroupMembers(_ context.Context, g string) ([]string, error) {
	return map[string][]string{"S0LEADS": {"U0ALICE", "U0MORGAN"}}[g], nil
}

type grantFixture struct {
	st   *store.Store
	rdb  redis.UniversalClient
	pfx  string // the store's key prefix
	clk  *gclock
	core *approval.Core
	ctx  context.Context
}

func newGrantFixture(t *testing.T, embedded bool, mod func(*approval.StandingApprovals)) grantFixture {
	t.Helper()
	clk := &gclock{now: gt0}
	var st *store.Store
	var err error
	var rdb redis.UniversalClient
	var prefix string
	if embedded {
		rdb, prefix = redistest.Embedded(t, clk.Now)
		st, err = store.New(rdb, store.Options{Prefix: prefix, Now: clk.Now})
	} else {
		rdb, prefix = redistest.Client(t)
		clk = &gclock{now: time.Now().UTC().Truncate(time.Millisecond)} // TIME is the wall clock's
		st, err = store.New(rdb, store.Options{Prefix: prefix, Now: clk.Now})
	}
	if err != nil {
		t.Fatal(err)
	}
	sa := approval.StandingApprovals{Store: st, Max: time.Hour, LookupBudget: time.Minute}
	if mod != nil {
		mod(&sa)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return grantFixture{st: st, rdb: rdb, pfx: prefix, clk: clk, ctx: ctx, core: approval.New(st, approval.Options{Now: clk.Now, Directory: groups{},
		Policy: approval.Policy{Admins: []string{gadmin.ID}}, Grants: sa})}
}

// core is another core over the same store, with other settings.
func (f grantFixture) coreWith(sa approval.StandingApprovals) *approval.Core {
	sa.Store = f.st
	return approval.New(f.st, approval.Options{Now: f.clk.Now, Directory: groups{},
		Policy: approval.Policy{Admins: []string{gadmin.ID}}, Grants: sa})
}

// dec is an approval decision id with its review extension.
type dec struct {
	id     string
	review map[string]any // nil: no extension
}

// scale is the decision a grant covers: scale_service, reversible, low risk.
func scale(id string) dec {
	return dec{id, map[string]any{"proposed_action": map[string]any{"action_type": "tool_call", "tool_name": "scale_service",
		"parameters": map[string]any{"service": "api", "replicas": 6}, "reversible": true},
		"risk_assessment": map[string]any{"risk_level": "low"}}}
}

// withReview is d with more review fields.
func (d dec) withReview(k string, v any) dec {
	r := maps.Clone(d.review)
	r[k] = v
	return dec{d.id, r}
}

// submit creates request id of agent through the core, as intake does.
func (f grantFixture) submit(t *testing.T, c *approval.Core, id, agent string, slack map[string]any, decs ...dec) store.Record {
	t.Helper()
	var decisions []any
	reviews := map[string]any{}
	for _, d := range decs {
		decisions = append(decisions, map[string]any{"id": d.id, "type": "approval", "prompt": "Do " + d.id + "?", "required": true})
		if d.review != nil {
			reviews[d.id] = d.review
		}
	}
	if slack == nil {
		slack = map[string]any{"reviewers": []any{galice.ID, gbob.ID}}
	}
	doc := map[string]any{
		"aah_version": "0.1",
		"artifact":    map[string]any{"id": id, "type": "decision/request", "title": "Scale " + id, "created_at": "2027-02-16T09:00:00Z"},
		"source":      map[string]any{"agent_id": agent},
		"content": map[string]any{"body": map[string]any{"schema": "aah:decision/request@1.0",
			"data": map[string]any{"title": "Scale", "decisions": decisions}}},
		"handoff":    map[string]any{"expects_response": true, "response_url": "https://agent.example/cb"},
		"extensions": map[string]any{"slack": slack, "decisions": reviews},
	}
	raw, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	req, err := aah.Parse(raw, aah.ParseOptions{Stored: true})
	if err != nil {
		t.Fatalf("request %s does not parse: %v", id, err)
	}
	rec, created, err := c.Create(f.ctx, approval.Submission{Request: req, Agent: agent, Document: raw,
		BodyHash: "h-" + id, Channel: "C0APPROVALS"})
	if err != nil || !created {
		t.Fatalf("Create(%s) = created %v, %v", id, created, err)
	}
	return rec
}

func (f grantFixture) audit(t *testing.T, id string) []store.AuditEntry {
	t.Helper()
	entries, err := f.st.Audit(f.ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	return entries
}

func events(entries []store.AuditEntry) []string {
	var out []string
	for _, e := range entries {
		out = append(out, e.Event)
	}
	return out
}

func refusalRule(err error) string {
	var r *approval.Refusal
	if errors.As(err, &r) {
		return r.Rule
	}
	return fmt.Sprintf("not a refusal: %v", err)
}

// A reviewer approves with "Approve similar for 30 minutes": the origin is
// approved and audited with the grant; the agent's next request of the same
// action key resolves at once, its answer, response and audit carrying the
// grant and the granter (via "grant").
func TestGrantApprovesAndMatches(t *testing.T) {
	t.Parallel()
	f := newGrantFixture(t, true, nil)
	f.submit(t, f.core, "origin-1", "deployer", nil, scale("scale"))
	out, g, err := f.core.Grant(f.ctx, "origin-1", "scale", galice, 30*time.Minute, "launch day")
	if err != nil || !out.Resolved || out.Record.Status != aah.StatusResolved {
		t.Fatalf("Grant = resolved %v status %s, %v; want the origin resolved", out.Resolved, out.Record.Status, err)
	}
	if g.Agent != "deployer" || g.ActionKey != "scale_service" || g.By.ID != galice.ID || g.FromRequest != "origin-1" ||
		g.Comment != "launch day" || !g.ExpiresAt.Equal(gt0.Add(30*time.Minute)) {
		t.Fatalf("grant = %+v", g)
	}
	if got := events(f.audit(t, "origin-1")); strings.Join(got, ",") != "requested,answered,resolved,grant_created" {
		t.Errorf("origin audit = %v", got)
	}
	created := f.audit(t, "origin-1")[3]
	if created.Data["grant_id"] != g.ID || created.Data["action_key"] != "scale_service" || created.Data["duration_s"] != float64(1800) {
		t.Errorf("grant_created data = %v", created.Data)
	}

	f.clk.Advance(time.Minute)
	rec := f.submit(t, f.core, "next-1", "deployer", nil, scale("scale"))
	a := rec.Answers["scale"]
	if rec.Status != aah.StatusResolved || a.Value != true || a.Grant == nil || a.Grant.ID != g.ID ||
		a.By.ID != galice.ID || a.By.Via != approval.ViaGrant {
		t.Fatalf("next request: status %s, answer %+v; want resolved by the grant", rec.Status, a)
	}
	var resp struct {
		Content struct {
			Body struct {
				Data aah.ResponseData `json:"data"`
			} `json:"body"`
		} `json:"content"`
	}
	if err := json.Unmarshal(rec.Response, &resp); err != nil {
		t.Fatal(err)
	}
	data := resp.Content.Body.Data
	if err := schema.ValidateResponse(rec.Response); err != nil {
		t.Errorf("the grant's response breaks the schema: %v", err)
	}
	if err := schema.ValidateResponse(out.Record.Response); err != nil {
		t.Errorf("the origin's response breaks the schema: %v", err)
	}
	if data.OverallStatus != "all_approved" || len(data.Responses) != 1 || data.Responses[0].Grant == nil ||
		data.Responses[0].Grant.ID != g.ID || data.Responses[0].Grant.By.ID != galice.ID {
		t.Errorf("response data = %+v; want approved, the entry carrying the grant", data)
	}
	entries := f.audit(t, "next-1")
	if got := events(entries); strings.Join(got, ",") != "requested,resolved" {
		t.Fatalf("next audit = %v", got)
	}
	res := entries[1]
	grant, _ := res.Data["grant"].(map[string]any)
	if res.Actor != "human:"+galice.ID || res.Data["via"] != approval.ViaGrant || grant["id"] != g.ID {
		t.Errorf("resolved entry = actor %s, data %v; want alice via the grant", res.Actor, res.Data)
	}
	// Its delivery to the agent is scheduled as for any resolution.
	if rec.Delivery.State == "" {
		t.Errorf("no delivery scheduled: %+v", rec.Delivery)
	}
}

// Requests a grant does not cover are posted as usual.
func TestGrantDoesNotMatch(t *testing.T) {
	t.Parallel()
	f := newGrantFixture(t, true, nil)
	f.submit(t, f.core, "origin-1", "deployer", nil, scale("scale"))
	if _, _, err := f.core.Grant(f.ctx, "origin-1", "scale", galice, time.Hour, ""); err != nil {
		t.Fatal(err)
	}
	dropTable := dec{"drop", map[string]any{"proposed_action": map[string]any{"tool_name": "drop_table", "reversible": true}}}
	for _, tc := range []struct {
		name  string
		agent string
		slack map[string]any
		decs  []dec
	}{
		{"another agent", "reporter", nil, []dec{scale("scale")}},
		{"another action key", "deployer", nil, []dec{dropTable}},
		{"one decision of two uncovered", "deployer", nil, []dec{scale("scale"), dropTable}},
		{"a decision without the extension", "deployer", nil, []dec{scale("scale"), {"plain", nil}}},
		{"several sign-offs", "deployer", map[string]any{"reviewers": []any{galice.ID, gbob.ID}, "quorum": 2}, []dec{scale("scale")}},
		{"required roles", "deployer", map[string]any{"required_roles": []any{map[string]any{"role": "sre", "members": []any{galice.ID}}}},
			[]dec{scale("scale")}},
		{"irreversible", "deployer", nil, []dec{scale("scale").withReview("proposed_action",
			map[string]any{"tool_name": "scale_service", "reversible": false})}},
		{"irreversible by its risk", "deployer", nil, []dec{scale("scale").withReview("risk_assessment",
			map[string]any{"risk_level": "low", "reversibility": "irreversible"})}},
		{"critical risk", "deployer", nil, []dec{scale("scale").withReview("risk_assessment", map[string]any{"risk_level": "critical"})}},
		{"approve not accepted", "deployer", nil, []dec{scale("scale").withReview("responses", []any{"reject", "defer"})}},
		{"granter not a reviewer of it", "deployer", map[string]any{"reviewers": []any{gbob.ID}}, []dec{scale("scale")}},
		{"granter is its requester", "deployer", map[string]any{"reviewers": []any{galice.ID, gbob.ID}, "requested_by": galice.ID},
			[]dec{scale("scale")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			id := "no-" + strings.ReplaceAll(tc.name, " ", "-")
			if rec := f.submit(t, f.core, id, tc.agent, tc.slack, tc.decs...); rec.Status != aah.StatusPending {
				t.Errorf("%s: %s; want pending", id, rec.Status)
			}
		})
	}
	// A granter the workspace no longer lets grant: not used any more.
	narrowed := f.coreWith(approval.StandingApprovals{Max: time.Hour, Granters: []string{gbob.ID}})
	if rec := f.submit(t, narrowed, "no-longer-granter", "deployer", nil, scale("scale")); rec.Status != aah.StatusPending {
		t.Errorf("granter no longer in STANDING_APPROVAL_GRANTERS: %s; want pending", rec.Status)
	}
	// Standing approvals turned off: nothing matches.
	off := f.coreWith(approval.StandingApprovals{})
	if rec := f.submit(t, off, "grants-off", "deployer", nil, scale("scale")); rec.Status != aah.StatusPending {
		t.Errorf("standing approvals off: %s; want pending", rec.Status)
	}
	// Matching that runs out of its time (LookupBudget: reading the grants,
	// asking the directory): posted as usual, not held up.
	hurried := f.coreWith(approval.StandingApprovals{Max: time.Hour, LookupBudget: time.Nanosecond})
	if rec := f.submit(t, hurried, "no-time-to-match", "deployer", nil, scale("scale")); rec.Status != aah.StatusPending {
		t.Errorf("matching past its budget: %s; want pending", rec.Status)
	}
	// Still covered otherwise (the cases above failed for their reason).
	if rec := f.submit(t, f.core, "yes-1", "deployer", map[string]any{"reviewer_groups": []any{"S0LEADS"}}, scale("a"), scale("b")); rec.Status != aah.StatusResolved {
		t.Errorf("two covered decisions, granter in a reviewer group: %s; want resolved", rec.Status)
	}
}

// Grant refuses, changing nothing, what no standing approval may cover and
// whoever may not grant.
func TestGrantRefusals(t *testing.T) {
	t.Parallel()
	f := newGrantFixture(t, true, func(sa *approval.StandingApprovals) { sa.Granters = []string{"S0LEADS", gbob.ID} })
	f.submit(t, f.core, "plain", "deployer", nil, scale("scale"))
	f.submit(t, f.core, "gated", "deployer", map[string]any{"reviewers": []any{galice.ID, gbob.ID}, "quorum": 2}, scale("scale"))
	f.submit(t, f.core, "irrev", "deployer", nil, scale("scale").withReview("proposed_action", map[string]any{"tool_name": "x", "reversible": false}))
	f.submit(t, f.core, "critical", "deployer", nil, scale("scale").withReview("risk_assessment", map[string]any{"risk_level": "critical"}))
	f.submit(t, f.core, "nokey", "deployer", nil, dec{"scale", nil})
	f.submit(t, f.core, "carols", "deployer", map[string]any{"reviewers": []any{gcarol.ID}}, scale("scale"))
	f.submit(t, f.core, "noapprove", "deployer", nil, scale("scale").withReview("responses", []any{"reject", "defer"}))
	agent := aah.Person{ID: galice.ID, Agent: "helper", Via: aah.ViaAPI}
	for _, tc := range []struct {
		name, id string
		by       aah.Person
		d        time.Duration
		rule     string
	}{
		{"longer than the maximum", "plain", galice, 2 * time.Hour, approval.RuleInvalid},
		{"no duration", "plain", galice, 0, approval.RuleInvalid},
		{"several sign-offs", "gated", galice, time.Hour, approval.RuleGrant},
		{"irreversible", "irrev", galice, time.Hour, approval.RuleGrant},
		{"critical", "critical", galice, time.Hour, approval.RuleGrant},
		{"no action key", "nokey", galice, time.Hour, approval.RuleGrant},
		{"approve not accepted", "noapprove", galice, time.Hour, approval.RuleGrant},
		{"not in STANDING_APPROVAL_GRANTERS", "carols", gcarol, time.Hour, approval.RuleGranter},
		{"an agent", "plain", agent, time.Hour, approval.RuleGranter},
		{"may not approve it", "plain", aah.Person{ID: "U0MORGAN"}, time.Hour, approval.RuleReviewer},
		// Who may decide comes first: the granters are nobody else's business.
		{"neither a reviewer nor a granter", "plain", aah.Person{ID: "U0DAVE"}, time.Hour, approval.RuleReviewer},
	} {
		before := len(f.audit(t, tc.id))
		_, _, err := f.core.Grant(f.ctx, tc.id, "scale", tc.by, tc.d, "")
		if got := refusalRule(err); got != tc.rule {
			t.Errorf("%s: refused by %q; want %q", tc.name, got, tc.rule)
		}
		entries := f.audit(t, tc.id)
		if tc.rule == approval.RuleInvalid {
			continue // a bad input, refused before the request is read
		}
		if len(entries) != before+1 || entries[len(entries)-1].Event != "click_refused" || entries[len(entries)-1].Data["rule"] != tc.rule {
			t.Errorf("%s: refusal not audited: %v", tc.name, events(entries))
		}
	}
	for _, id := range []string{"plain", "gated", "irrev", "critical", "nokey", "noapprove"} {
		if rec, _ := f.st.Get(f.ctx, id); rec.Status != aah.StatusPending {
			t.Errorf("%s after refused grants: %s; want pending", id, rec.Status)
		}
	}
	if list, _ := f.core.Grants(f.ctx, ""); len(list) != 0 {
		t.Errorf("grants after refusals: %v", list)
	}
	off := f.coreWith(approval.StandingApprovals{})
	if _, _, err := off.Grant(f.ctx, "plain", "scale", galice, time.Minute, ""); refusalRule(err) != approval.RuleGrantsOff {
		t.Errorf("grants off: %v", err)
	}
}

// Revocation: the granter or an admin, audited on the origin; afterwards
// nothing matches. Expiry: matched until its last millisecond by the
// store's clock, then not.
func TestGrantRevokeAndExpiry(t *testing.T) {
	t.Parallel()
	f := newGrantFixture(t, true, nil)
	f.submit(t, f.core, "origin-1", "deployer", nil, scale("scale"))
	_, g, err := f.core.Grant(f.ctx, "origin-1", "scale", galice, time.Hour, "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.core.RevokeGrant(f.ctx, g.ID, gbob); refusalRule(err) != approval.RuleGranter {
		t.Errorf("Bob revoking Alice's grant: %v; want refused", err)
	}
	if rec := f.submit(t, f.core, "still", "deployer", nil, scale("scale")); rec.Status != aah.StatusResolved {
		t.Fatalf("after a refused revoke: %s; want resolved", rec.Status)
	}
	rev, err := f.core.RevokeGrant(f.ctx, g.ID, gadmin)
	if err != nil || rev.RevokedBy == nil || rev.RevokedBy.ID != gadmin.ID {
		t.Fatalf("admin revoke = %+v, %v", rev, err)
	}
	if again, err := f.core.RevokeGrant(f.ctx, g.ID, galice); err != nil || again.RevokedBy.ID != gadmin.ID {
		t.Errorf("revoking again = %+v, %v; want the admin's revocation, no error", again, err)
	}
	entries := f.audit(t, "origin-1")
	if last := entries[len(entries)-1]; last.Event != "grant_revoked" || last.Actor != "human:"+gadmin.ID || last.Data["grant_id"] != g.ID {
		t.Errorf("origin's last audit entry = %+v; want grant_revoked by the admin", last)
	}
	if got := events(entries); strings.Count(strings.Join(got, ","), "grant_revoked") != 1 {
		t.Errorf("origin audit = %v; want one grant_revoked", got)
	}
	if rec := f.submit(t, f.core, "after-revoke", "deployer", nil, scale("scale")); rec.Status != aah.StatusPending {
		t.Errorf("after the revoke: %s; want pending", rec.Status)
	}
	if _, err := f.core.RevokeGrant(f.ctx, "grant_nope", gadmin); !errors.Is(err, store.ErrGrantNotFound) {
		t.Errorf("revoking an unknown grant: %v", err)
	}

	f.submit(t, f.core, "origin-2", "deployer", nil, scale("scale"))
	_, g2, err := f.core.Grant(f.ctx, "origin-2", "scale", gbob, 15*time.Minute, "")
	if err != nil {
		t.Fatal(err)
	}
	f.clk.Advance(15*time.Minute - time.Millisecond)
	if rec := f.submit(t, f.core, "last-ms", "deployer", nil, scale("scale")); rec.Status != aah.StatusResolved {
		t.Errorf("a millisecond before expiry: %s; want resolved", rec.Status)
	}
	f.clk.Advance(time.Millisecond)
	if rec := f.submit(t, f.core, "expired", "deployer", nil, scale("scale")); rec.Status != aah.StatusPending {
		t.Errorf("at expiry: %s; want pending", rec.Status)
	}
	if list, _ := f.core.Grants(f.ctx, ""); len(list) != 0 {
		t.Errorf("live grants after expiry: %v", list)
	}
	if _, err := f.core.RevokeGrant(f.ctx, g2.ID, gbob); !errors.Is(err, store.ErrGrantNotFound) {
		t.Errorf("revoking an expired grant: %v; want ErrGrantNotFound", err)
	}
}

// 30 intakes of the agent race the revocation (real Redis): every request
// submitted after RevokeGrant returned is pending, every one done before it
// started was resolved by the grant.
func TestGrantRevokeRacesIntakes(t *testing.T) {
	t.Parallel()
	f := newGrantFixture(t, false, nil)
	f.submit(t, f.core, "origin-1", "deployer", nil, scale("scale"))
	_, g, err := f.core.Grant(f.ctx, "origin-1", "scale", galice, time.Hour, "")
	if err != nil {
		t.Fatal(err)
	}
	const workers, each = 30, 3
	var started, returned atomic.Bool
	revokeNow, revoked := make(chan struct{}), make(chan struct{})
	var done atomic.Int32
	var mu sync.Mutex
	var before, after int
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := range each + 1 {
				if k == each {
					<-revoked
				}
				afterRevoke := returned.Load()
				rec := f.submit(t, f.core, fmt.Sprintf("race-%d-%d", w, k), "deployer", nil, scale("scale"))
				beforeRevoke := !started.Load()
				mu.Lock()
				switch {
				case afterRevoke && rec.Status != aah.StatusPending:
					t.Errorf("%s submitted after the revoke returned: %s", rec.ID, rec.Status)
				case beforeRevoke && rec.Status != aah.StatusResolved:
					t.Errorf("%s done before the revoke started: %s", rec.ID, rec.Status)
				}
				if afterRevoke {
					after++
				}
				if beforeRevoke {
					before++
				}
				mu.Unlock()
				if done.Add(1) == workers {
					close(revokeNow)
				}
			}
		}()
	}
	<-revokeNow
	started.Store(true)
	if _, err := f.core.RevokeGrant(f.ctx, g.ID, galice); err != nil {
		t.Fatal(err)
	}
	returned.Store(true)
	close(revoked)
	wg.Wait()
	if before == 0 || after == 0 {
		t.Errorf("%d intakes before the revoke, %d after; want both sides of the race", before, after)
	}
}

// hookedStorage runs before, once, as a create begins its transaction:
// after the core matched the request against the listed grants.
type hookedStorage struct {
	*store.Store
	before func()
}

func (h *hookedStorage) Create(ctx context.Context, n store.NewRequest) (store.Record, bool, error) {
	if h.before != nil {
		h.before()
		h.before = nil
	}
	return h.Store.Create(ctx, n)
}

// A revocation that failed half way (its record marked revoked, the copies
// of the shards not yet tombstoned: the store's RevokeGrant returned an
// error) is completed by revoking again: once a revoke returns without an
// error, no request resolves by the grant, not even one whose intake listed
// the grant before the revocation began.
func TestGrantRevokeRetryCompletesAFailedRevocation(t *testing.T) {
	t.Parallel()
	f := newGrantFixture(t, true, nil)
	f.submit(t, f.core, "origin-1", "deployer", nil, scale("scale"))
	_, g, err := f.core.Grant(f.ctx, "origin-1", "scale", galice, time.Hour, "")
	if err != nil {
		t.Fatal(err)
	}
	hooked := &hookedStorage{Store: f.st}
	intake := approval.New(hooked, approval.Options{Now: f.clk.Now, Directory: groups{},
		Policy: approval.Policy{Admins: []string{gadmin.ID}}, Grants: approval.StandingApprovals{Store: f.st, Max: time.Hour, LookupBudget: time.Minute}})
	hooked.before = func() {
		// What the first revoke left when tombstoning failed: the record
		// says revoked (the revokeGrant script ran), every copy is live.
		key := f.pfx + ":{grants}:grant:" + g.ID
		if err := f.rdb.HSet(f.ctx, key, "revoked_ms", strconv.FormatInt(f.clk.Now().UnixMilli(), 10),
			"revoked_by", `{"id":"U0ALICE","name":"alice"}`).Err(); err != nil {
			t.Error(err)
		}
		if _, err := f.core.RevokeGrant(f.ctx, g.ID, galice); err != nil {
			t.Errorf("revoking again: %v", err)
		}
	}
	if rec := f.submit(t, intake, "after-retry", "deployer", nil, scale("scale")); rec.Status != aah.StatusPending {
		t.Fatalf("created after the revoke returned: %s; want pending", rec.Status)
	}
	// Someone who may not revoke it is told it is revoked, and changes
	// nothing.
	if again, err := f.core.RevokeGrant(f.ctx, g.ID, gbob); err != nil || again.RevokedAt.IsZero() {
		t.Errorf("Bob on the revoked grant: %+v, %v", again, err)
	}
	// The revocation the retry completed is audited, once, however often
	// it is revoked again.
	if _, err := f.core.RevokeGrant(f.ctx, g.ID, galice); err != nil {
		t.Fatal(err)
	}
	if got := events(f.audit(t, "origin-1")); strings.Count(strings.Join(got, ","), "grant_revoked") != 1 {
		t.Errorf("origin audit = %v; want one grant_revoked", got)
	}
}

package bot

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/slack-go/slack"
)

type fakeDirectoryAPI struct {
	userCalls, groupCalls atomic.Int32
	fail                  atomic.Bool
	slow                  time.Duration // how long a group lookup takes
}

func (f *fakeDirectoryAPI) GetUserByEmailContext(_ context.Context, email string) (*slack.User, error) {
	f.userCalls.Add(1)
	switch {
	case f.fail.Load():
		return nil, errors.New("slack down")
	case email == "nobody@example.com":
		return nil, slack.SlackErrorResponse{Err: "users_not_found"}
	}
	return &slack.User{ID: "U0" + strings.ToUpper(strings.TrimSuffix(email, "@example.com"))}, nil
}

func (f *fakeDirectoryAPI) GetUserInfoContext(_ context.Context, user string, _ ...slack.GetUserInfoOption) (*slack.User, error) {
	return &slack.User{ID: user, Name: strings.ToLower(user)}, nil
}

func (f *fakeDirectoryAPI) GetUserGroupMembersContext(_ context.Context, group string, _ ...slack.GetUserGroupMembersOption) ([]string, error) {
	f.groupCalls.Add(1)
	time.Sleep(f.slow)
	if f.fail.Load() {
		return nil, errors.New("slack down")
	}
	return []string{"U0A", "U0B"}, nil
}

// Answers are cached until the TTL passes; failures are not cached, so the
// next click asks Slack again.
func TestDirectoryCachesBriefly(t *testing.T) {
	t.Parallel()
	api := &fakeDirectoryAPI{}
	reg := prometheus.NewRegistry()
	d := NewDirectory(api, time.Minute, reg)
	now := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	d.now = func() time.Time { return now }
	ctx := context.Background()

	for range 3 {
		if id, err := d.UserIDByEmail(ctx, "a@example.com"); err != nil || id != "U0A" {
			t.Fatalf("UserIDByEmail = %q, %v", id, err)
		}
		if m, err := d.GroupMembers(ctx, "S0G"); err != nil || len(m) != 2 {
			t.Fatalf("GroupMembers = %v, %v", m, err)
		}
	}
	if api.userCalls.Load() != 1 || api.groupCalls.Load() != 1 {
		t.Errorf("calls within the TTL: users %d, groups %d; want 1 each", api.userCalls.Load(), api.groupCalls.Load())
	}
	if hits := counterValue(t, reg, "approvalbot_directory_lookups_total", "group", "hit"); hits != 2 {
		t.Errorf("group cache hits = %v, want 2", hits)
	}

	now = now.Add(time.Minute + time.Second)
	api.fail.Store(true)
	if _, err := d.GroupMembers(ctx, "S0G"); err == nil {
		t.Fatal("an expired entry was served while Slack fails")
	}
	api.fail.Store(false)
	if _, err := d.GroupMembers(ctx, "S0G"); err != nil {
		t.Fatalf("after Slack recovers: %v", err)
	}
	if api.groupCalls.Load() != 3 {
		t.Errorf("group calls = %d, want 3 (expired, failed, retried)", api.groupCalls.Load())
	}
}

// An email Slack does not know is no user (cached like any answer); many
// clicks arriving at once on a cold cache make one Slack call.
func TestDirectoryUnknownEmailAndConcurrentMisses(t *testing.T) {
	t.Parallel()
	api := &fakeDirectoryAPI{slow: 50 * time.Millisecond}
	d := NewDirectory(api, time.Minute, nil)
	if id, err := d.UserIDByEmail(context.Background(), "nobody@example.com"); err != nil || id != "" {
		t.Fatalf("unknown email: %q, %v", id, err)
	}
	var wg sync.WaitGroup
	for range 50 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if m, err := d.GroupMembers(context.Background(), "S0BURST"); err != nil || len(m) != 2 {
				t.Errorf("GroupMembers = %v, %v", m, err)
			}
		}()
	}
	wg.Wait()
	if n := api.groupCalls.Load(); n != 1 {
		t.Errorf("%d Slack calls for a burst of 50 misses, want 1", n)
	}
}

// counterValue reads one series of a counter vector with labels kind, result.
func counterValue(t *testing.T, reg *prometheus.Registry, name, kind, result string) float64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["kind"] == kind && labels["result"] == result {
				return m.GetCounter().GetValue()
			}
		}
	}
	return 0
}

// A user is named by their real name, else their display name, else their
// handle (seed 000 names people as "Gracie Redfern", not "gracie").
func TestPersonNamePrefersRealThenDisplayName(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		u    slack.User
		want string
	}{
		{slack.User{ID: "U1", Name: "gracie", RealName: "Gracie Redfern", Profile: slack.UserProfile{DisplayName: "gr"}}, "Gracie Redfern"},
		{slack.User{ID: "U1", Name: "gracie", Profile: slack.UserProfile{RealName: "Gracie R.", DisplayName: "gr"}}, "Gracie R."},
		{slack.User{ID: "U1", Name: "gracie", Profile: slack.UserProfile{DisplayName: " gr "}}, "gr"},
		{slack.User{ID: "U1", Name: "gracie"}, "gracie"},
		{slack.User{ID: "U1"}, "U1"},
	} {
		if got := personName(&tc.u); got != tc.want {
			t.Errorf("personName(%+v) = %q, want %q", tc.u, got, tc.want)
		}
	}
}

package approval

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/approvalbot/approvalbot/aah"
	"github.com/approvalbot/approvalbot/store"
)

// Rules of intake's policy refusals, recorded in the audit
// (store.IntakeRefusal.Rule).
const (
	// RulePolicyFloor: the request sets a sign-off rule looser than the
	// workspace's, and its agent may not.
	RulePolicyFloor = "policy_floor"
	// RuleNoDeciders: the request names nobody who may decide it, and
	// neither does the workspace.
	RuleNoDeciders = "no_deciders"
)

// Submission is a request an agent sent, valid against the spec and
// Slack's limits, ready to become pending.
type Submission struct {
	Request *aah.Request
	// Agent is the authenticated agent (the intake token's name).
	Agent string
	// Document is the artifact as sent, with a generated id filled in;
	// BodyHash identifies the body, so a resubmission is recognised.
	Document json.RawMessage
	BodyHash string
	// Channel is where the message goes: the request's, or the default.
	Channel string
}

// PolicyRefusal is a submission the workspace's policy refuses: nothing is
// stored. The adapter answers with the problems (400) and audits it.
type PolicyRefusal struct {
	Rule     string // RulePolicyFloor or RuleNoDeciders: the first problem's
	Problems []aah.FieldError
}

func (r *PolicyRefusal) Error() string {
	return fmt.Sprintf("refused by the workspace's policy (%s): %s: %s", r.Rule, r.Problems[0].Field, r.Problems[0].Message)
}

// SignOffFloor is the sign-off rules a request from agent is held to: the
// workspace's, or none below them when the operator lets the agent loosen
// them (POLICY_OVERRIDE_AGENTS). Intake validates a quorum against it.
func (c *Core) SignOffFloor(agent string) aah.Defaults { return c.policy.Defaults.For(agent) }

// Create makes a submission a pending request: it checks the workspace's
// policy (a *PolicyRefusal stores nothing), then stores the request with
// its Slack post and its timers (Timers) in one transaction. created is
// false when the identical request was stored before (an agent's retry);
// a different body under a stored id is store.ErrConflict.
func (c *Core) Create(ctx context.Context, s Submission) (rec store.Record, created bool, err error) {
	if refusal := c.policyRefusal(s.Request, s.Agent); refusal != nil {
		return store.Record{}, false, refusal
	}
	req := s.Request
	match, matched := c.grantMatcher(ctx, req, s.Agent)
	rec, created, err = c.store.Create(ctx, store.NewRequest{
		ID:          req.Artifact.ID,
		Agent:       s.Agent,
		Document:    s.Document,
		BodyHash:    s.BodyHash,
		Channel:     s.Channel,
		ResponseURL: req.CallbackURL(), // "" under expects_response: false
		Timers:      Timers(req, c.now(), c.reminders, c.timerKinds),
		Reviewers:   namedUserIDs(req),
		Deadline:    req.EffectiveDeadline(),
		Events:      req.Events,
		// Nobody to tell how it ends: closing it schedules no notice.
		NoRequester: len(req.Requester()) == 0,
		// Decided by the default reviewers, whose lists show it.
		Unnamed: !req.NamesDeciders(),
		// Resolved at once by a standing approval, if one covers it.
		MatchGrants: match,
	})
	if err != nil {
		return store.Record{}, false, fmt.Errorf("create request %s: %w", req.Artifact.ID, err)
	}
	if created && matched != nil && !rec.Status.Open() {
		c.metrics.observe(*matched)
	}
	return rec, created, nil
}

// settingOf names the workspace setting behind each sign-off field.
var settingOf = map[string]string{
	"extensions.slack.quorum":              "APPROVAL_QUORUM",
	"extensions.slack.allow_self_approval": "ALLOW_SELF_APPROVAL",
	"extensions.slack.require_reason":      "REQUIRE_REASON",
}

// policyRefusal lists the ways a valid request from agent breaks the
// workspace's authorization policy: sign-off rules it would loosen (the
// workspace's are a floor), and naming nobody where the workspace names
// nobody for such requests either (nobody named never means anyone).
func (c *Core) policyRefusal(req *aah.Request, agent string) *PolicyRefusal {
	var r PolicyRefusal
	for _, l := range req.Loosenings(c.SignOffFloor(agent)) {
		verb := "is looser than"
		if l.Field == "extensions.slack.quorum" {
			verb = "is below"
		}
		r.Problems = append(r.Problems, aah.FieldError{Field: l.Field, Message: fmt.Sprintf(
			"%s %s the workspace's %s=%s: a request may tighten the workspace's rules, not loosen them "+
				"(unless the operator lists agent %q in POLICY_OVERRIDE_AGENTS)", l.Asked, verb, settingOf[l.Field], l.Floor, agent)})
	}
	if len(r.Problems) > 0 {
		r.Rule = RulePolicyFloor
	}
	if !req.NamesDeciders() && !c.policy.DecidesUnnamed() {
		r.Problems = append(r.Problems, aah.FieldError{Field: "extensions.slack.reviewers", Message: "is required: this request " +
			"names nobody who may decide it, and the workspace names nobody for such requests. Name " +
			"extensions.slack.reviewers, reviewer_groups or required_roles, or ask the operator to set " +
			"DEFAULT_REVIEWERS (or DEFAULT_REVIEWER_GROUPS)"})
		if r.Rule == "" {
			r.Rule = RuleNoDeciders
		}
	}
	if len(r.Problems) == 0 {
		return nil
	}
	return &r
}

// namedUserIDs are the Slack user ids a request names as reviewers or role
// members; they index it by reviewer at once (emails and groups resolve
// when the message is posted).
func namedUserIDs(req *aah.Request) []string {
	var out []string
	add := func(r string) {
		if aah.IsSlackUserID(r) && !slices.Contains(out, r) {
			out = append(out, r)
		}
	}
	for _, r := range req.Slack.Reviewers {
		add(r)
	}
	for _, role := range req.Slack.RequiredRoles {
		for _, m := range role.Members {
			add(m)
		}
	}
	return out
}

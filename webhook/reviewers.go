package webhook

import (
	"crypto/sha256"
	"crypto/subtle"
	"fmt"
	"net/http"
	"strings"

	"github.com/approvalbot/approvalbot/aah"
)

// Reviewers maps the bearer tokens of people who decide through the API to
// their Slack user ids (REVIEWER_TOKENS): the identity every authorization
// rule, sign-off and the audit see, as if they had clicked in Slack.
type Reviewers struct {
	entries []tokenEntry // agent holds the Slack user id
}

// ParseReviewerTokens parses REVIEWER_TOKENS: comma-separated
// "<Slack user id>:<token>" pairs, as INTAKE_TOKENS pairs a name with its
// token. A person may hold several tokens (one per tool, each revocable).
// Errors never quote a token.
func ParseReviewerTokens(spec string) (Reviewers, error) {
	var rv Reviewers
	seen := map[[32]byte]bool{}
	for i, pair := range strings.Split(spec, ",") {
		pair = strings.TrimSpace(pair)
		if pair == "" {
			continue
		}
		// As in ParseTokens, an entry's parts are quoted only once it is
		// known to be user:token (position, not content, names it).
		user, token, ok := strings.Cut(pair, ":")
		if !ok || token == "" {
			return Reviewers{}, fmt.Errorf("REVIEWER_TOKENS: entry %d is not <Slack user id>:<token> (a ':' between them)", i+1)
		}
		if !aah.IsSlackUserID(user) {
			return Reviewers{}, fmt.Errorf("REVIEWER_TOKENS: entry %d does not start with a Slack user id (U…/W…): "+
				"<Slack user id>:<token>", i+1)
		}
		if len(token) < 16 {
			return Reviewers{}, fmt.Errorf("REVIEWER_TOKENS: a token of %s is shorter than 16 characters", user)
		}
		sum := sha256.Sum256([]byte(token))
		if seen[sum] {
			return Reviewers{}, fmt.Errorf("REVIEWER_TOKENS: a token of %s is listed twice", user)
		}
		seen[sum] = true
		rv.entries = append(rv.entries, tokenEntry{agent: user, sum: sum})
	}
	return rv, nil
}

// Len is the number of configured reviewer tokens.
func (rv Reviewers) Len() int { return len(rv.entries) }

// SharesTokenWith reports whether a reviewer token is also an intake token:
// one credential would then be two identities.
func (rv Reviewers) SharesTokenWith(t Tokens) bool {
	for _, r := range rv.entries {
		for _, e := range t.entries {
			if r.sum == e.sum {
				return true
			}
		}
	}
	return false
}

// userFor is the Slack user of the request's bearer token, "" for none.
// Like Tokens.agentFor it compares SHA-256 digests in constant time against
// every entry.
func (rv Reviewers) userFor(r *http.Request) string {
	scheme, token, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") || token == "" {
		return ""
	}
	sum := sha256.Sum256([]byte(strings.TrimSpace(token)))
	user := ""
	for _, e := range rv.entries {
		if subtle.ConstantTimeCompare(sum[:], e.sum[:]) == 1 {
			user = e.agent
		}
	}
	return user
}

// ParseAgentApprovers parses AGENT_APPROVERS: "<agent>:<Slack user id>"
// entries granting an INTAKE_TOKENS agent the right to decide through the
// API with that Slack user's authority (a service user the requests name,
// or the workspace's defaults or admins list). It is audited as the agent.
func ParseAgentApprovers(entries []string) (map[string]string, error) {
	out := map[string]string{}
	for _, e := range entries {
		e = strings.TrimSpace(e)
		if e == "" {
			continue
		}
		agent, user, ok := strings.Cut(e, ":")
		switch {
		case !ok || !agentNamePattern.MatchString(agent):
			return nil, fmt.Errorf("AGENT_APPROVERS: entry %q is not <agent>:<Slack user id>", e)
		case !aah.IsSlackUserID(user):
			return nil, fmt.Errorf("AGENT_APPROVERS: agent %q decides as %q, which is not a Slack user id (U…/W…)", agent, user)
		case out[agent] != "":
			return nil, fmt.Errorf("AGENT_APPROVERS: agent %q is listed twice", agent)
		}
		out[agent] = user
	}
	return out, nil
}

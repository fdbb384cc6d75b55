package webhook

import (
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strings"
)

// AnonymousAgent is the identity of unauthenticated callers when Tokens is
// empty and unauthenticated intake is allowed (local mode only).
const AnonymousAgent = "local"

var agentNamePattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$`)

// Tokens maps bearer tokens to agent identities.
type Tokens struct {
	entries []tokenEntry
}

type tokenEntry struct {
	agent string
	sum   [32]byte
}

// ParseTokens parses INTAKE_TOKENS: comma-separated "name:token" pairs. The
// name becomes the agent identity that owns the requests it creates.
func ParseTokens(spec string) (Tokens, error) {
	var t Tokens
	seen := map[string]bool{}
	for i, pair := range strings.Split(spec, ",") {
		pair = strings.TrimSpace(pair)
		if pair == "" {
			continue
		}
		// Until an entry is known to be name:token, its parts are not
		// quoted: one missing its ':', or written the other way round,
		// would print the token. The entry's position says which it is.
		name, token, ok := strings.Cut(pair, ":")
		if !ok || token == "" {
			return Tokens{}, fmt.Errorf("INTAKE_TOKENS: entry %d is not name:token (a ':' between them)", i+1)
		}
		if !agentNamePattern.MatchString(name) {
			return Tokens{}, fmt.Errorf("INTAKE_TOKENS: entry %d: the agent name must be 1-64 letters, digits, _ . -", i+1)
		}
		if len(token) < 16 {
			return Tokens{}, fmt.Errorf("INTAKE_TOKENS: entry %d: its token is shorter than 16 characters "+
				"(or the entry is token:name, the wrong way round)", i+1)
		}
		if seen[name] {
			return Tokens{}, fmt.Errorf("INTAKE_TOKENS: agent %q is listed twice", name)
		}
		seen[name] = true
		t.entries = append(t.entries, tokenEntry{agent: name, sum: sha256.Sum256([]byte(token))})
	}
	return t, nil
}

// Has reports whether agent is the name of a configured token.
func (t Tokens) Has(agent string) bool {
	return slices.ContainsFunc(t.entries, func(e tokenEntry) bool { return e.agent == agent })
}

// Agents are the configured agents' names, in the order given.
func (t Tokens) Agents() []string {
	out := make([]string, len(t.entries))
	for i, e := range t.entries {
		out[i] = e.agent
	}
	return out
}

// Len is the number of configured tokens.
func (t Tokens) Len() int { return len(t.entries) }

var errUnauthorized = errors.New("missing or invalid bearer token")

// agentFor authenticates a request. Tokens are compared as SHA-256 digests in
// constant time, against every configured token, so neither the token's
// length nor which entry matched leaks through timing.
func (t Tokens) agentFor(r *http.Request, allowAnonymous bool) (string, error) {
	if len(t.entries) == 0 && allowAnonymous {
		return AnonymousAgent, nil
	}
	scheme, token, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") || token == "" {
		return "", errUnauthorized
	}
	sum := sha256.Sum256([]byte(strings.TrimSpace(token)))
	agent := ""
	for _, e := range t.entries {
		if subtle.ConstantTimeCompare(sum[:], e.sum[:]) == 1 {
			agent = e.agent
		}
	}
	if agent == "" {
		return "", errUnauthorized
	}
	return agent, nil
}

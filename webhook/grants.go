package webhook

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/approvalbot/approvalbot/aah"
	"github.com/approvalbot/approvalbot/approval"
	"github.com/approvalbot/approvalbot/store"
)

// Standing approvals through the API (docs/api.md#standing-approvals):
//
//	GET    /v1/grants                   live grants: an agent's own (intake token) or all (reviewer token)
//	DELETE /v1/grants/{id}              revoke (reviewer token of the granter or an admin)
//	POST   /v1/requests/{id}/grant      approve a decision and grant a standing approval (a decider)
//
// Granting is its own endpoint rather than a field of /answers: it answers
// one decision, with a duration, and returns the grant it created.

// Grants are the standing-approval operations; *approval.Core implements
// them (Options.Grants, default Decisions when it does).
type Grants interface {
	Grant(ctx context.Context, requestID, decisionID string, by aah.Person, d time.Duration, comment string) (approval.Outcome, store.Grant, error)
	RevokeGrant(ctx context.Context, grantID string, by aah.Person) (store.Grant, error)
	Grants(ctx context.Context, agent string) ([]store.Grant, error)
}

// ActionGrant is the grant endpoint's action (Options.Decided, metrics).
const ActionGrant = "grant"

// registerGrants mounts the standing-approval endpoints (without Grants,
// none).
func (a *API) registerGrants(mux router) {
	if a.opts.Grants == nil {
		a.opts.Grants, _ = a.opts.Decisions.(Grants)
	}
	if a.opts.Grants == nil {
		return
	}
	mux.HandleFunc("GET /v1/grants", a.listGrants)
	mux.HandleFunc("DELETE /v1/grants/{id}", a.revokeGrant)
	mux.HandleFunc("POST /v1/requests/{id}/grant", a.grant)
}

// grantsView is GET /v1/grants.
type grantsView struct {
	Grants []store.Grant `json:"grants"`
}

// listGrants is GET /v1/grants: with a reviewer token every live grant,
// with an intake token the agent's own.
func (a *API) listGrants(w http.ResponseWriter, r *http.Request) {
	agent := ""
	if a.opts.Reviewers.userFor(r) == "" {
		var err error
		if agent, err = a.opts.Tokens.agentFor(r, a.opts.AllowAnonymous); err != nil {
			w.Header().Set("WWW-Authenticate", `Bearer realm="approvalbot"`)
			writeError(w, r, http.StatusUnauthorized, "unauthorized: "+err.Error())
			return
		}
	}
	ctx, cancel := context.WithTimeout(r.Context(), a.opts.StoreTimeout)
	defer cancel()
	list, err := a.opts.Grants.Grants(ctx, agent)
	if err != nil {
		a.failed(w, r.WithContext(ctx), "list standing approvals", err)
		return
	}
	if list == nil {
		list = []store.Grant{}
	}
	writeJSON(w, http.StatusOK, grantsView{Grants: list})
}

// revokeGrant is DELETE /v1/grants/{id}: a reviewer token of the granter
// or of an admin revokes it (200 with the grant, revoked); once this
// answers, no later request resolves by it.
func (a *API) revokeGrant(w http.ResponseWriter, r *http.Request) {
	user := a.opts.Reviewers.userFor(r)
	if user == "" {
		if _, err := a.opts.Tokens.agentFor(r, a.opts.AllowAnonymous); err != nil {
			w.Header().Set("WWW-Authenticate", `Bearer realm="approvalbot"`)
			writeError(w, r, http.StatusUnauthorized, "unauthorized: "+err.Error())
			return
		}
		writeRefused(w, r, http.StatusForbidden, "an agent may not revoke standing approvals: "+
			"the reviewer token (REVIEWER_TOKENS) of the person who granted it, or of an admin, does", approval.RuleGranter)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), a.opts.StoreTimeout)
	defer cancel()
	id := r.PathValue("id")
	g, err := a.opts.Grants.RevokeGrant(ctx, id, aah.Person{ID: user, Via: aah.ViaAPI})
	var refusal *approval.Refusal
	switch {
	case errors.As(err, &refusal):
		writeRefused(w, r, http.StatusForbidden, refusal.Reason, refusal.Rule)
	case errors.Is(err, store.ErrGrantNotFound):
		writeError(w, r, http.StatusNotFound, "no standing approval with id "+quote(id)+": it was never granted, or it expired")
	case err != nil:
		a.failed(w, r.WithContext(ctx), "revoke standing approval", err)
	default:
		a.log.InfoContext(ctx, "api standing approval revoked", "grant_id", g.ID, "user", user)
		writeJSON(w, http.StatusOK, g)
	}
}

// grantView answers an accepted grant: the approval as the decision
// endpoints answer it, and the standing approval created.
type grantView struct {
	decisionView
	Grant store.Grant `json:"grant"`
}

// grant is POST /v1/requests/{id}/grant: {"decision_id", "duration",
// "comment"}: approve the decision as the decider (every sign-off rule of
// /answers applies) and grant their standing approval of the request's
// agent's action key for duration (a Go duration: "15m", "1h", at most
// STANDING_APPROVAL_MAX).
func (a *API) grant(w http.ResponseWriter, r *http.Request) {
	r, cancel, by, body, ok := a.openDecision(w, r, ActionGrant)
	if !ok {
		return
	}
	defer cancel()
	ctx := r.Context()
	var in struct {
		DecisionID string `json:"decision_id"`
		Duration   string `json:"duration"`
		Comment    string `json:"comment"`
	}
	probs := decode(body, &in)
	var d time.Duration
	if probs == nil {
		var err error
		switch d, err = time.ParseDuration(strings.TrimSpace(in.Duration)); {
		case in.DecisionID == "":
			probs = []aah.FieldError{{Field: "decision_id", Message: "name the approval decision to approve and grant"}}
		case in.Duration == "":
			probs = []aah.FieldError{{Field: "duration", Message: `is required: how long similar requests are approved, e.g. "1h"`}}
		case err != nil:
			probs = []aah.FieldError{{Field: "duration", Message: `must be a duration such as "15m" or "1h", got ` + quote(in.Duration)}}
		}
	}
	if len(probs) > 0 {
		a.opts.Metrics.decision(ActionGrant, "invalid")
		writeError(w, r, http.StatusBadRequest, "invalid grant: "+probs[0].Field+" "+probs[0].Message, probs...)
		return
	}
	id := r.PathValue("id")
	out, g, err := a.opts.Grants.Grant(ctx, id, in.DecisionID, by, d, in.Comment)
	var refusal *approval.Refusal
	switch {
	case errors.As(err, &refusal):
		a.opts.Metrics.decision(ActionGrant, "refused")
		writeGrantRefusal(w, r, refusal)
		return
	case errors.Is(err, store.ErrNotFound):
		a.opts.Metrics.decision(ActionGrant, "not_found")
		writeError(w, r, http.StatusNotFound, notFound(id))
		return
	case err != nil && out.Changed:
		// The approval is recorded (its response and delivery too); only
		// the grant failed: say so, not "nothing was changed".
		a.opts.Metrics.decision(ActionGrant, "error")
		a.log.ErrorContext(ctx, "api: the approval was recorded, the standing approval not", "request_id", id, "err", err)
		a.wake()
		if a.opts.Decided != nil {
			a.opts.Decided(ActionGrant, by, out.Record)
		}
		status := http.StatusInternalServerError
		if store.Unavailable(err) {
			status = http.StatusServiceUnavailable
			w.Header().Set("Retry-After", strconv.Itoa(RetryAfter))
		}
		writeError(w, r, status, "the decision was approved, but the standing approval could not be created; "+
			"nothing covers similar requests")
		return
	case err != nil:
		a.opts.Metrics.decision(ActionGrant, "error")
		a.failed(w, r, ActionGrant, err)
		return
	}
	a.opts.Metrics.decision(ActionGrant, "recorded")
	a.log.InfoContext(ctx, "api standing approval granted", "request_id", id, "grant_id", g.ID, "user", by.ID)
	a.wake()
	if a.opts.Decided != nil {
		a.opts.Decided(ActionGrant, by, out.Record)
	}
	v := detailOf(out.Record)
	v.Callback = nil // a reviewer's business is the decision, not where the agent's responses go
	writeJSON(w, http.StatusOK, grantView{decisionView: decisionView{Changed: out.Changed, Resolved: out.Resolved, Request: v}, Grant: g})
}

// writeGrantRefusal answers a refused grant: 403 when the person may not
// grant (or standing approvals are off), 409 when the decision cannot be
// granted (several sign-offs, irreversible, critical, no action key), 400
// for a duration or comment out of bounds; the decision endpoints' codes
// otherwise.
func writeGrantRefusal(w http.ResponseWriter, req *http.Request, r *approval.Refusal) {
	status := 0
	switch r.Rule {
	case approval.RuleGranter, approval.RuleGrantsOff:
		status = http.StatusForbidden
	case approval.RuleGrant:
		status = http.StatusConflict
	}
	if status == 0 {
		if r.Field == "duration" {
			writeRefused(w, req, http.StatusBadRequest, r.Reason, r.Rule, aah.FieldError{Field: "duration", Message: r.Reason})
			return
		}
		writeRefusal(w, req, ActionGrant, r)
		return
	}
	writeRefused(w, req, status, r.Reason, r.Rule)
}

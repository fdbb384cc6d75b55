// Package webhook is approvalbot's HTTP API for agents: the intake webhook
// that accepts decision/request artifacts, and the endpoints to read, list
// and withdraw them.
package webhook

import (
	"cmp"
	"context"
	"errors"
	"log/slog"
	"net/http"
	"time"

	"github.com/approvalbot/approvalbot/store"
)

// Store is the state the API needs; *store.Store implements it.
type Store interface {
	Create(ctx context.Context, n store.NewRequest) (store.Record, bool, error)
	Get(ctx context.Context, id string) (store.Record, error)
	List(ctx context.Context, q store.ListQuery) (store.Page, error)
	Withdraw(ctx context.Context, id string) (store.Record, error)
}

// DefaultMaxBodyBytes bounds an intake body unless Options say otherwise.
const DefaultMaxBodyBytes = 1 << 20

// Options configure the API.
type Options struct {
	Store  Store
	Tokens Tokens
	// AllowAnonymous accepts requests without a token when no tokens are
	// configured (local mode only); they belong to AnonymousAgent.
	AllowAnonymous bool
	// DefaultChannel receives requests that name no channel.
	DefaultChannel string
	// MaxBodyBytes bounds intake bodies; default DefaultMaxBodyBytes.
	MaxBodyBytes int64
	// AllowInsecureCallbacks accepts http:// and private response URLs.
	AllowInsecureCallbacks bool
	// Jobs is told when new work is queued, so a local worker starts at once.
	Jobs    interface{ Wake() }
	Metrics *Metrics
	Logger  *slog.Logger
	Now     func() time.Time
}

// API serves the agent-facing endpoints.
type API struct {
	opts Options
	log  *slog.Logger
}

// New validates its dependencies and returns the API.
func New(opts Options) (*API, error) {
	if opts.Store == nil {
		return nil, errors.New("webhook: Store is required")
	}
	if opts.Tokens.Len() == 0 && !opts.AllowAnonymous {
		return nil, errors.New("webhook: no intake tokens configured and anonymous intake not allowed")
	}
	opts.MaxBodyBytes = cmp.Or(opts.MaxBodyBytes, DefaultMaxBodyBytes)
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Metrics == nil {
		opts.Metrics = NewMetrics(nil)
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &API{opts: opts, log: log}, nil
}

// Register mounts the API's routes on mux.
func (a *API) Register(mux *http.ServeMux) {
	mux.HandleFunc("POST /v1/requests", a.authenticated(a.create))
	mux.HandleFunc("GET /v1/requests", a.authenticated(a.list))
	mux.HandleFunc("GET /v1/requests/{id}", a.authenticated(a.get))
	mux.HandleFunc("DELETE /v1/requests/{id}", a.authenticated(a.withdraw))
}

type agentHandler func(w http.ResponseWriter, r *http.Request, agent string)

func (a *API) authenticated(h agentHandler) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		agent, err := a.opts.Tokens.agentFor(r, a.opts.AllowAnonymous)
		if err != nil {
			if r.Method == http.MethodPost {
				a.opts.Metrics.intake("unauthorized")
			}
			w.Header().Set("WWW-Authenticate", `Bearer realm="approvalbot"`)
			writeError(w, http.StatusUnauthorized, "unauthorized: "+err.Error())
			return
		}
		h(w, r, agent)
	}
}

// owned loads a request the agent owns, answering 404 or 403 otherwise.
func (a *API) owned(w http.ResponseWriter, r *http.Request, agent string) (store.Record, bool) {
	rec, err := a.opts.Store.Get(r.Context(), r.PathValue("id"))
	switch {
	case errors.Is(err, store.ErrNotFound):
		writeError(w, http.StatusNotFound, "no request with id "+quote(r.PathValue("id")))
		return store.Record{}, false
	case err != nil:
		a.internal(w, r, "get request", err)
		return store.Record{}, false
	case rec.Agent != agent:
		writeError(w, http.StatusForbidden, "request "+quote(rec.ID)+" belongs to another agent")
		return store.Record{}, false
	}
	return rec, true
}

func (a *API) get(w http.ResponseWriter, r *http.Request, agent string) {
	if rec, ok := a.owned(w, r, agent); ok {
		writeJSON(w, http.StatusOK, viewOf(rec))
	}
}

func (a *API) withdraw(w http.ResponseWriter, r *http.Request, agent string) {
	rec, ok := a.owned(w, r, agent)
	if !ok {
		return
	}
	rec, err := a.opts.Store.Withdraw(r.Context(), rec.ID)
	switch {
	case errors.Is(err, store.ErrNotOpen):
		writeError(w, http.StatusConflict, "request "+quote(rec.ID)+" is already "+string(rec.Status)+" and cannot be withdrawn")
		return
	case err != nil:
		a.internal(w, r, "withdraw request", err)
		return
	}
	a.log.InfoContext(r.Context(), "request withdrawn", "request_id", rec.ID, "agent", agent)
	a.wake()
	writeJSON(w, http.StatusOK, viewOf(rec))
}

func (a *API) wake() {
	if a.opts.Jobs != nil {
		a.opts.Jobs.Wake()
	}
}

func (a *API) internal(w http.ResponseWriter, r *http.Request, op string, err error) {
	a.log.ErrorContext(r.Context(), "api: "+op+" failed", "err", err)
	writeError(w, http.StatusInternalServerError, "internal error; the request was not changed")
}

func quote(s string) string {
	if len(s) > 140 {
		s = s[:140] + "…"
	}
	return `"` + s + `"`
}

package webhook

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"

	"github.com/approvalbot/approvalbot/aah"
	"github.com/approvalbot/approvalbot/approval"
	"github.com/approvalbot/approvalbot/blocks"
	"github.com/approvalbot/approvalbot/store"
	"github.com/google/uuid"
)

// accepted is the 202 answer to a new request.
type accepted struct {
	ID     string     `json:"id"`
	Status aah.Status `json:"status"`
	Links  links      `json:"links"`
}

type links struct {
	Self string `json:"self"`
	Next string `json:"next,omitempty"`
}

func selfLink(id string) string { return "/v1/requests/" + id }

// create is POST /v1/requests: validate, check the agent's limits (rate,
// then a slot under its cap of open requests; a resubmission passes, see
// withinLimits), check the workspace's authorization policy (a refusal is
// audited, the request not stored), store with its Slack post queued (one
// atomic step, fenced by the slot's reservation), settle the slot, answer
// 202. It never waits for Slack.
func (a *API) create(w http.ResponseWriter, r *http.Request, agent string) {
	ctx := r.Context()
	if !isJSON(r.Header.Get("Content-Type")) {
		a.opts.Metrics.intake("unsupported_media_type")
		writeError(w, r, http.StatusUnsupportedMediaType, "Content-Type must be application/json")
		return
	}
	raw, err := io.ReadAll(http.MaxBytesReader(w, r.Body, a.opts.MaxBodyBytes))
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			a.opts.Metrics.intake("too_large")
			writeError(w, r, http.StatusRequestEntityTooLarge, fmt.Sprintf("body exceeds %d bytes", a.opts.MaxBodyBytes))
			return
		}
		a.opts.Metrics.intake("bad_body")
		writeError(w, r, http.StatusBadRequest, "could not read the body: "+err.Error())
		return
	}
	req, doc, hash, probs := a.validate(raw, agent)
	if len(probs) > 0 {
		a.opts.Metrics.intake("invalid")
		a.log.InfoContext(ctx, "intake: request rejected", "agent", agent, "problems", len(probs), "first_field", probs[0].Field)
		writeError(w, r, http.StatusBadRequest, invalidMessage(probs), probs...)
		return
	}
	var rec store.Record
	var created bool
	for pass := 0; ; pass++ {
		slot, resubmitted, ok := a.withinLimits(ctx, w, r, agent, req.Artifact.ID, hash)
		if !ok {
			return
		}
		createCtx := ctx
		switch {
		case slot.Allowed():
			// The create must commit while the slot's reservation holds.
			createCtx = store.WriteBy(ctx, slot.CreateBy)
		case resubmitted:
			// Let past the limits as the stored request's retry: it
			// must still be stored when the create runs.
			createCtx = store.StoredOnly(ctx)
		}
		rec, created, err = a.opts.Lifecycle.Create(createCtx, approval.Submission{
			Request: req, Agent: agent, Document: doc, BodyHash: hash,
			Channel: cmp.Or(req.Slack.Channel, a.opts.DefaultChannel),
		})
		if resubmitted && errors.Is(err, store.ErrNotFound) && pass < 2 {
			continue // deleted by retention since it was looked up: a new request, limits and all
		}
		// A request a standing approval resolved as it was created is not
		// open: its slot is released, not confirmed.
		a.settleSlot(ctx, slot, created && rec.Status.Open(), err)
		break
	}
	var refused *approval.PolicyRefusal
	if errors.As(err, &refused) {
		a.refuseByPolicy(ctx, w, r, raw, agent, refused)
		return
	}
	switch {
	case errors.Is(err, store.ErrConflict):
		a.opts.Metrics.intake("conflict")
		writeError(w, r, http.StatusConflict, "a different request with id "+quote(req.Artifact.ID)+" already exists; "+
			"resubmit the identical body to retry, or use a new artifact.id")
		return
	case store.Unavailable(err):
		// Maybe stored: the write may have reached Redis before the
		// deadline cut the wait for its answer. Intake is idempotent on
		// artifact.id, so the retry this asks for answers 200 with the
		// stored request instead of storing it twice.
		a.opts.Metrics.intake("unavailable")
		a.unavailable(w, r, "store request", err, "the request could not be stored in time: Redis did not answer. "+
			"Resubmit the identical body after Retry-After; if it was stored meanwhile, the retry answers 200 with it")
		return
	case err != nil:
		a.opts.Metrics.intake("error")
		a.failed(w, r, "store request", err)
		return
	case !created:
		a.opts.Metrics.intake("duplicate")
		writeJSON(w, http.StatusOK, viewOf(rec))
		return
	}
	a.opts.Metrics.intake("accepted")
	a.log.InfoContext(ctx, "intake: request accepted", "request_id", rec.ID, "agent", agent,
		"decisions", len(req.Data.Decisions), "channel", rec.Channel)
	a.wake()
	w.Header().Set("Location", selfLink(rec.ID))
	writeJSON(w, http.StatusAccepted, accepted{ID: rec.ID, Status: rec.Status, Links: links{Self: selfLink(rec.ID)}})
}

// validate parses the body, applies the Slack checks and the channel rule,
// and fills in a generated id. It returns the document to store and its hash.
// agent's sign-off rules (the workspace's, or looser when it is granted)
// decide whether a quorum can be met.
func (a *API) validate(raw []byte, agent string) (req *aah.Request, doc json.RawMessage, hash string, probs []aah.FieldError) {
	tree, err := aah.Decode(raw)
	if err == nil {
		err = aah.CheckUnicode(raw) // before the decoded tree hides it as U+FFFD
	}
	if err == nil {
		req, err = aah.ParseDecoded(tree, aah.ParseOptions{Now: a.opts.Now(), AllowInsecureCallbacks: a.opts.AllowInsecureCallbacks,
			Defaults: a.opts.Lifecycle.SignOffFloor(agent)})
	}
	var verr *aah.ValidationError
	if errors.As(err, &verr) {
		return nil, nil, "", verr.Problems
	} else if err != nil {
		return nil, nil, "", []aah.FieldError{{Message: err.Error()}}
	}
	probs = blocks.Check(req)
	if store.ReservedID(req.Artifact.ID) {
		probs = append(probs, aah.FieldError{Field: "artifact.id",
			Message: fmt.Sprintf("%q is reserved; choose another id, or omit it to have one generated", req.Artifact.ID)})
	}
	if req.Slack.Channel == "" && a.opts.DefaultChannel == "" {
		probs = append(probs, aah.FieldError{Field: "extensions.slack.channel",
			Message: "is required: this server has no SLACK_DEFAULT_CHANNEL"})
	}
	if len(probs) > 0 {
		return nil, nil, "", probs
	}
	doc = compact(raw)
	if req.Artifact.ID == "" {
		req.Artifact.ID = uuid.NewString()
		if doc, err = withArtifactID(raw, req.Artifact.ID); err != nil {
			return nil, nil, "", []aah.FieldError{{Field: "artifact", Message: err.Error()}}
		}
		tree.(map[string]any)["artifact"].(map[string]any)["id"] = req.Artifact.ID
	}
	return req, doc, canonicalHash(tree), nil
}

func invalidMessage(probs []aah.FieldError) string {
	if len(probs) == 1 {
		return "invalid decision request: 1 problem"
	}
	return fmt.Sprintf("invalid decision request: %d problems", len(probs))
}

func isJSON(contentType string) bool {
	mt, _, err := mime.ParseMediaType(contentType)
	return err == nil && (mt == "application/json" || strings.HasSuffix(mt, "+json"))
}

// withArtifactID sets artifact.id in a document. Every other value keeps its
// bytes (compacted, never re-escaped); only the order of keys in the two
// touched objects changes.
func withArtifactID(raw []byte, id string) (json.RawMessage, error) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(raw, &top); err != nil || top == nil {
		return nil, fmt.Errorf("decode document: not a JSON object (%v)", err)
	}
	var art map[string]json.RawMessage
	if err := json.Unmarshal(top["artifact"], &art); err != nil {
		return nil, fmt.Errorf("decode artifact: %w", err)
	}
	if art == nil {
		return nil, errors.New("artifact must be an object")
	}
	var err error
	if art["id"], err = marshalVerbatim(id); err != nil {
		return nil, err
	}
	if top["artifact"], err = marshalVerbatim(art); err != nil {
		return nil, err
	}
	return marshalVerbatim(top)
}

// marshalVerbatim encodes v without json.Marshal's HTML escaping, so raw
// values inside come out as they went in.
func marshalVerbatim(v any) (json.RawMessage, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, fmt.Errorf("encode document: %w", err)
	}
	return bytes.TrimRight(b.Bytes(), "\n"), nil
}

// compact drops insignificant whitespace; the document is otherwise verbatim,
// unknown fields included.
func compact(doc []byte) json.RawMessage {
	var b bytes.Buffer
	if err := json.Compact(&b, doc); err != nil {
		return doc
	}
	return b.Bytes()
}

package webhook

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"slices"
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
// atomic step, under the slot reservation's write deadline), settle the slot, answer
// 202. It never waits for Slack.
func (a *API) create(w http.ResponseWriter, r *http.Request, agent string) {
	ctx := r.Context()
	if !isJSON(r.Header.Get("Content-Type")) {
		a.opts.Metrics.intake("unsupported_media_type")
		writeError(w, r, http.StatusUnsupportedMediaType, "Content-Type must be application/json")
		return
	}
	raw, err := readBody(http.MaxBytesReader(w, r.Body, a.opts.MaxBodyBytes), min(r.ContentLength, a.opts.MaxBodyBytes))
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
	sub := approval.Submission{
		Request: req, Agent: agent, Document: doc, BodyHash: hash,
		Channel: cmp.Or(req.Slack.Channel, a.opts.DefaultChannel),
	}
	var c limitedCreate
	for pass := 0; ; pass++ {
		var ok bool
		if c, ok = a.createWithinLimits(ctx, w, r, sub, pass); !ok {
			return // refused by the limits: answered
		}
		if c.resubmitted && errors.Is(c.err, store.ErrNotFound) && pass < 2 {
			continue // deleted by retention since it was looked up: a new request, limits and all
		}
		// A request a standing approval resolved as it was created is not
		// open: its slot is released, not confirmed.
		a.settleSlot(ctx, c.slot, c.created && c.rec.Status.Open(), c.err)
		break
	}
	rec, created, err := c.rec, c.created, c.err
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
	// Debug: the access log's line (Info) already names the request; a
	// second line per request costs the intake's hot path.
	a.log.DebugContext(ctx, "intake: request accepted", "request_id", rec.ID, "agent", agent,
		"decisions", len(req.Data.Decisions), "channel", rec.Channel)
	a.wakeFor(rec.ID)
	w.Header().Set("Location", selfLink(rec.ID))
	writeJSON(w, http.StatusAccepted, accepted{ID: rec.ID, Status: rec.Status, Links: links{Self: selfLink(rec.ID)}})
}

// admission is the limits the create applies itself, in its own round trip
// (store.Admission), when the agent has a cap on open requests: the cap's
// reservation is what admits the create. Nil otherwise, and on a retry of
// a resubmission (pass > 0), which withinLimits handles.
func (a *API) admission(agent string, pass int) *store.Admission {
	maxOpen := a.opts.Limits.MaxOpenFor(agent)
	if pass > 0 || maxOpen <= 0 {
		return nil
	}
	return &store.Admission{Agent: agent, Rate: a.opts.Limits.RateFor(agent), MaxOpen: maxOpen, Lease: a.openLease()}
}

// limitedCreate is a create made under the agent's limits: its outcome,
// and the slot it reserved (to settle) or the resubmission it let through.
type limitedCreate struct {
	rec         store.Record
	created     bool
	slot        store.OpenSlot
	resubmitted bool
	err         error
}

// createWithinLimits creates sub under its agent's limits; ok is false when
// they refused it (answered 429 by judge). Under a cap the create applies
// them itself, in its round trip (admission); refused there, judge answers
// as withinLimits would, or lets a resubmission of a stored request
// through; admitted only once the create had run (its count had to be
// seeded or reconciled), it is created again under the reservation.
// Otherwise withinLimits applies them first (a rate without a cap, or a
// retry of a resubmission).
func (a *API) createWithinLimits(ctx context.Context, w http.ResponseWriter, r *http.Request, sub approval.Submission, pass int) (c limitedCreate, ok bool) {
	id := sub.Request.Artifact.ID
	if adm := a.admission(sub.Agent, pass); adm != nil {
		c.rec, c.created, c.err = a.opts.Lifecycle.Create(store.AdmitOnCreate(ctx, adm), sub)
		var refused *approval.PolicyRefusal
		switch {
		case adm.Decided && !errors.Is(c.err, store.ErrNotAdmitted):
			c.slot = adm.Slot
			return c, true
		case adm.Decided:
			if c.slot, c.resubmitted, ok = a.judge(ctx, w, r, sub.Agent, id, sub.BodyHash, adm.Decision, adm.Slot); !ok {
				return c, false
			}
		case !errors.As(c.err, &refused):
			return c, true // failed before the limits applied: answered as a create's failure
		default:
			// Refused by the workspace's policy before the limits applied.
			// A refusal is audited: an agent past its limits is answered
			// 429 instead, so that it cannot flood the audit chains.
			c.slot, c.resubmitted, ok = a.withinLimits(ctx, w, r, sub.Agent, id, sub.BodyHash)
			return c, ok
		}
	} else if c.slot, c.resubmitted, ok = a.withinLimits(ctx, w, r, sub.Agent, id, sub.BodyHash); !ok {
		return c, false
	}
	c.rec, c.created, c.err = a.opts.Lifecycle.Create(limitedContext(ctx, c.slot, c.resubmitted), sub)
	return c, true
}

// limitedContext is the create's context once the limits let it through:
// it must commit while the slot's reservation holds; a resubmission let
// past them must still be stored when it runs.
func limitedContext(ctx context.Context, slot store.OpenSlot, resubmitted bool) context.Context {
	switch {
	case slot.Allowed():
		return store.WriteBy(ctx, slot.CreateBy)
	case resubmitted:
		return store.StoredOnly(ctx)
	}
	return ctx
}

// validate parses the body, applies the Slack checks and the channel rule,
// and fills in a generated id. It returns the document to store and its hash.
// agent's sign-off rules (the workspace's, or looser when it is granted)
// decide whether a quorum can be met.
func (a *API) validate(raw []byte, agent string) (req *aah.Request, doc json.RawMessage, hash string, probs []aah.FieldError) {
	// One pass decodes the body and compacts it, with room for a generated
	// id to be spliced in (storedWithID).
	tree, compacted, err := aah.DecodeCompact(raw, generatedIDRoom)
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
	if compacted == nil { // decoded by encoding/json (see aah.DecodeCompact)
		compacted = compact(raw, generatedIDRoom)
	}
	doc = compacted
	if req.Artifact.ID == "" {
		req.Artifact.ID = uuid.NewString()
		art := tree.(map[string]any)["artifact"].(map[string]any)
		if doc, err = storedWithID(raw, compacted, art, req.Artifact.ID); err != nil {
			return nil, nil, "", []aah.FieldError{{Field: "artifact", Message: err.Error()}}
		}
		art["id"] = req.Artifact.ID
	}
	return req, doc, canonicalHash(tree), nil
}

// readBody reads a request's body in one allocation when its length is
// told (size), where io.ReadAll grows its buffer from 512 bytes (five
// allocations and copies for seed 000's example). A length that lies only
// costs growing, as io.ReadAll would. Only up to readBodyPresize is
// allocated before the bytes arrive: a client that declares a large body
// and sends it slowly holds no more memory than it has sent, beyond that.
func readBody(body io.Reader, size int64) ([]byte, error) {
	if size <= 0 {
		return io.ReadAll(body)
	}
	var buf bytes.Buffer
	buf.Grow(int(min(size, readBodyPresize)) + bytes.MinRead) // MinRead: room to read EOF without growing
	_, err := buf.ReadFrom(body)
	return buf.Bytes(), err
}

// readBodyPresize is the most readBody allocates for a body before reading
// it: far above a decision request's usual size.
const readBodyPresize = 64 << 10

// generatedIDRoom is what storedWithID splices in: "id":"<uuid>", and a comma.
const generatedIDRoom = len(`"id":"",`) + 36

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

// storedWithID is the document to store for a request whose artifact.id
// was generated: doc (raw compacted), with "id" spliced in as the first member of
// the artifact object (art, as decoded), so no other value is decoded or
// re-encoded and the key order is the agent's. When the artifact already
// has an "id" member (null) or cannot be located, withArtifactID sets it
// by decoding and re-encoding the two objects instead.
func storedWithID(raw, doc []byte, art map[string]any, id string) (json.RawMessage, error) {
	if _, has := art["id"]; has {
		return withArtifactID(raw, id)
	}
	member := appendJSONString(append(make([]byte, 0, len(id)+8), `"id":`...), id)
	at := artifactObject(doc)
	if at < 0 {
		return withArtifactID(raw, id)
	}
	if doc[at+1] != '}' {
		member = append(member, ',')
	}
	return slices.Insert(doc, at+1, member...), nil
}

// artifactObject is the offset of the '{' that opens the top-level
// "artifact" member's value in a compacted document whose top level is an
// object, or -1. As a decoder does, the last of duplicate keys wins, and
// escaped keys are compared unescaped.
func artifactObject(doc []byte) int {
	found, depth, expectKey := -1, 0, false
	for i := 0; i < len(doc); i++ {
		switch doc[i] {
		case '{':
			depth++
			expectKey = depth == 1
		case '[':
			depth++
		case '}', ']':
			depth--
		case ',':
			expectKey = depth == 1
		case '"':
			end := stringEnd(doc, i)
			if end < 0 {
				return -1
			}
			if expectKey {
				expectKey = false
				if keyIs(doc[i:end+1], "artifact") && end+2 < len(doc) && doc[end+1] == ':' {
					found = end + 2
				}
			}
			i = end
		}
	}
	if found < 0 || doc[found] != '{' {
		return -1
	}
	return found
}

// stringEnd is the offset of the quote that closes the JSON string opening
// at doc[start], or -1.
func stringEnd(doc []byte, start int) int {
	for i := start + 1; i < len(doc); i++ {
		switch doc[i] {
		case '\\':
			i++ // the escaped character, a quote included
		case '"':
			return i
		}
	}
	return -1
}

// keyIs reports whether the quoted JSON string quoted decodes to name.
func keyIs(quoted []byte, name string) bool {
	if bytes.IndexByte(quoted, '\\') < 0 {
		return len(quoted) == len(name)+2 && string(quoted[1:len(quoted)-1]) == name
	}
	var key string
	return json.Unmarshal(quoted, &key) == nil && key == name
}

// withArtifactID sets artifact.id in a document. Every other value keeps its
// bytes (compacted, never re-escaped); only the order of keys in the two
// touched objects changes. It is storedWithID's fallback.
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
// unknown fields included. room is spare capacity the caller will append
// or splice into without another allocation.
func compact(doc []byte, room int) json.RawMessage {
	b := bytes.NewBuffer(make([]byte, 0, len(doc)+room))
	if err := json.Compact(b, doc); err != nil {
		// A copy, never doc itself: the caller splices into what it gets,
		// and doc's memory backs the decoded tree's strings.
		return append(make([]byte, 0, len(doc)+room), doc...)
	}
	return b.Bytes()
}

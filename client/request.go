package client

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"time"

	"github.com/approvalbot/approvalbot/aah"
	"github.com/google/uuid"
)

// Request builds a decision/request artifact (seed 000 §1) without writing
// its JSON by hand: the envelope (aah_version, artifact, content, lifecycle)
// is filled in. For anything it does not model, put it in Extensions, or
// submit a document of your own with SubmitJSON.
type Request struct {
	// ID is artifact.id; Submit generates one when it is empty, so its
	// retries are idempotent.
	ID    string
	Title string
	// AgentID is source.agent_id (default "agent"); AgentName, AgentRole
	// and TaskID the rest of source.
	AgentID   string
	AgentName string
	AgentRole string
	TaskID    string
	// Context is content.body.data.context.
	Context   string
	Decisions []Decision
	// Deadline is data.deadline (zero: none).
	Deadline time.Time
	// ResponseURL is handoff.response_url: where the signed decision
	// response is POSTed (see CallbackHandler); empty: poll with Wait.
	ResponseURL string
	// Priority is handoff.priority: any text; low, normal, medium, high,
	// urgent and critical are shown with a badge in Slack.
	Priority string
	// ParentArtifactIDs is handoff.parent_artifact_ids: requests this one
	// follows up (e.g. one a reviewer deferred).
	ParentArtifactIDs []string
	// Extensions is the artifact's extensions, verbatim ("slack",
	// "decisions", "events", "on_deadline").
	Extensions map[string]any
}

// Decision is one decision of a Request.
type Decision struct {
	ID          string           `json:"id"`
	Type        aah.DecisionType `json:"type"`
	Prompt      string           `json:"prompt"`
	Description string           `json:"description,omitempty"`
	Required    bool             `json:"required"`
	Default     any              `json:"default,omitempty"`
	Options     []Choice         `json:"options,omitempty"`
	Constraints *Constraints     `json:"constraints,omitempty"`
}

// Choice is an option of a choice or multi_choice decision.
type Choice struct {
	Value       string `json:"value"`
	Label       string `json:"label"`
	Description string `json:"description,omitempty"`
}

// Constraints bound a decision's answer: lengths (text), values (number),
// counts (multi_choice) or dates (date, as strings).
type Constraints struct {
	Min     any    `json:"min,omitempty"`
	Max     any    `json:"max,omitempty"`
	Pattern string `json:"pattern,omitempty"`
}

// Document returns the request as the artifact JSON the API takes, with
// artifact.created_at set to now.
func (r *Request) Document(now time.Time) ([]byte, error) {
	type obj = map[string]any
	data := obj{"decisions": r.Decisions}
	if r.Decisions == nil {
		data["decisions"] = []Decision{}
	}
	if r.Context != "" {
		data["context"] = r.Context
	}
	if !r.Deadline.IsZero() {
		data["deadline"] = r.Deadline.UTC().Format(time.RFC3339)
	}
	source := obj{"agent_id": cmp.Or(r.AgentID, "agent")}
	for k, v := range map[string]string{"agent_name": r.AgentName, "agent_role": r.AgentRole, "task_id": r.TaskID} {
		if v != "" {
			source[k] = v
		}
	}
	handoff := obj{"target_role": "human", "expects_response": true}
	if r.ResponseURL != "" {
		handoff["response_url"] = r.ResponseURL
	}
	if r.Priority != "" {
		handoff["priority"] = r.Priority
	}
	if len(r.ParentArtifactIDs) > 0 {
		handoff["parent_artifact_ids"] = r.ParentArtifactIDs
	}
	doc := obj{
		"aah_version": "0.1",
		"artifact": obj{"id": r.ID, "type": aah.ArtifactTypeRequest, "title": r.Title,
			"created_at": now.UTC().Format(time.RFC3339)},
		"source":    source,
		"content":   obj{"media_type": aah.MediaTypeRequest, "body": obj{"schema": aah.SchemaRequest, "data": data}},
		"handoff":   handoff,
		"lifecycle": obj{"status": "pending"},
	}
	if len(r.Extensions) > 0 {
		doc["extensions"] = r.Extensions
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(doc); err != nil {
		return nil, fmt.Errorf("approvalbot: encode the request: %w", err)
	}
	return bytes.TrimSpace(buf.Bytes()), nil
}

// NewID returns a fresh request id (artifact.id), as Submit generates.
func NewID() string { return "req_" + uuid.NewString() }

// withID returns doc with artifact.id set to a new id when it has none,
// and the id. A doc with an id is returned byte for byte, so a resubmission
// is identical.
// WithID returns doc with artifact.id set (generated when it has none) and
// that id, so a caller knows which request a submission that failed in
// flight may have stored. SubmitJSON does the same; "" when doc has no
// artifact object or an id the bot will refuse.
func WithID(doc []byte) ([]byte, string, error) { return withID(doc) }

func withID(doc []byte) ([]byte, string, error) {
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.UseNumber() // numbers re-encode exactly as sent
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		return nil, "", fmt.Errorf("approvalbot: the request is not a JSON object: %w", err)
	}
	art, ok := m["artifact"].(map[string]any)
	if !ok {
		return doc, "", nil // the bot names what is missing
	}
	if id, ok := art["id"].(string); ok && id != "" {
		return doc, id, nil
	}
	if _, present := art["id"]; present {
		return doc, "", nil // not a string, or "": the bot refuses it and says why
	}
	id := NewID()
	art["id"] = id
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(m); err != nil {
		return nil, "", fmt.Errorf("approvalbot: encode the request: %w", err)
	}
	return bytes.TrimSpace(buf.Bytes()), id, nil
}

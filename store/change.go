package store

import (
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/approvalbot/approvalbot/aah"
)

// Change is what one update of a request writes. Update applies all of it in
// one MULTI/EXEC, or none of it: the fields, the answers, the status move
// between indexes, the jobs, and the audit entries.
//
// Callers outside the store say what changes with typed fields; how each is
// laid out in the request hash (field names, encodings) is the store's
// business (see encode and Apply).
type Change struct {
	Answers []aah.Answer // replace the stored answer of each decision
	Status  aah.Status   // the new status; "" keeps the current one
	// Bump says the Slack message must show this change: the version goes up
	// and, when the message exists, a sync job is scheduled.
	Bump   bool
	Jobs   []JobAt      // jobs to schedule
	Cancel []string     // job ids to unschedule (e.g. a post nobody needs)
	Audit  []AuditEvent // appended to the request's and the shard's chains
	// Timers schedules more of the request's timed jobs (a next reminder);
	// like those scheduled with it, they are cancelled when it closes.
	Timers []JobAt
	// AddReviewers files the request under these Slack users in the reviewer
	// indexes (resolved mentions, escalation targets), if it stays open.
	AddReviewers []string
	// Quiet marks bookkeeping (stored mentions): the updated time stays and
	// long polls are not woken.
	Quiet bool

	// Resolution records the request's response as it closes (with Status
	// resolved or expired).
	Resolution *Resolution
	// WithdrawnAt records when the agent withdrew the request (with Status
	// withdrawn); zero leaves it.
	WithdrawnAt time.Time
	// Escalation records an escalation step applied, or given up on.
	Escalation *Escalation
	// Reassignment appends a reviewer's hand-made escalation to the
	// request's (hash field "reassignments"); Escalation, marked Manual,
	// carries the users or channel it reaches.
	Reassignment *aah.Reassignment
	// Directive records the defer, change_plan or abort that closes the
	// request (hash field "directive"), with Status and Resolution.
	Directive *aah.Directive
	// RemindersDone, when above 0, is the number of the last reminder
	// completed.
	RemindersDone int
	// Reached adds a recipient a reminder or an escalation step was handled
	// for (sent, or refused for good), so a retried job skips them.
	Reached *Reach

	// push appends to lists of the request's shard (delivery attempts,
	// dead letters): store-internal.
	push []listPush
	// set and del are request hash fields the store's own operations write
	// directly (post state, delivery state, mentions).
	set map[string]any
	del []string
}

// Resolution is a request's response, recorded once as the request closes:
// immutable from then on.
type Resolution struct {
	Response []byte    // the decision/response artifact
	At       time.Time // when it was built
	By       aah.Person
	// Deliver schedules the response's delivery to the agent's
	// response_url now (delivery state pending, the deliver job), under
	// WebhookID, the id its signed deliveries carry.
	Deliver   bool
	WebhookID string
}

// Escalation is one step of data.escalation applied to a request: the
// users or channels it now reaches, or the problem that stopped it. Lists
// are merged into what the request already records; a step is recorded once.
type Escalation struct {
	// Step is the index of the data.escalation step; with Manual, the
	// hand-made escalation's key (see ManualStep), which is not recorded
	// among the applied steps (Record.EscalatedSteps).
	Step     int
	Manual   bool
	To       []string // Slack users who may now answer the request
	Channels []string // channels it was escalated to (an id or "#name")
	// Problem says why the step could not be resolved ("step 1 (x): ..."),
	// appended to the request's escalation error.
	Problem string
	// At is when the step applied: the request's EscalatedAt, when it is
	// its first escalation (a step that failed records none).
	At time.Time
}

// Reach is one recipient handled by a reminder (Kind JobRemind, N its
// number) or an escalation step (Kind JobEscalate, N the step).
type Reach struct {
	Kind string
	N    int
	To   string
}

// listPush appends to a list of the request's shard, keeping its last Cap
// entries.
type listPush struct {
	Key   string
	Value string
	Cap   int64
}

// auditOnly reports a change that only records an event (a refused click):
// the request itself does not change, so its updated time stays and long
// polls are not woken.
func (ch *Change) auditOnly() bool {
	return len(ch.set) == 0 && len(ch.del) == 0 && len(ch.Answers) == 0 && ch.Status == "" && !ch.Bump &&
		len(ch.Jobs) == 0 && len(ch.Cancel) == 0 && len(ch.push) == 0 && len(ch.Timers) == 0 &&
		ch.Resolution == nil && ch.WithdrawnAt.IsZero() && ch.Escalation == nil && ch.RemindersDone == 0 && ch.Reached == nil &&
		ch.Reassignment == nil && ch.Directive == nil
}

// Request hash fields of reminders and escalation, numbered per reminder or
// step: "reminded_2", "escalation_sent_0".
const (
	remindedField       = "reminded_"
	escalationSentField = "escalation_sent_"
)

// reachField is the hash field listing a reminder's or a step's recipients.
func (r Reach) field() string {
	if r.Kind == JobEscalate {
		return escalationSentField + strconv.Itoa(r.N)
	}
	return remindedField + strconv.Itoa(r.N)
}

// typedFields encodes the typed fields of ch as request hash fields, given
// the record as read under WATCH (lists are merged into it).
func (ch *Change) typedFields(rec Record) []any {
	var f []any
	if r := ch.Resolution; r != nil {
		f = append(f, "response", string(r.Response), "resolved_ms", r.At.UnixMilli(), "resolved_by", encodePerson(r.By))
		if r.Deliver {
			f = append(f, "delivery_state", DeliveryPending, "webhook_id", r.WebhookID)
		}
	}
	if !ch.WithdrawnAt.IsZero() {
		f = append(f, "withdrawn_ms", ch.WithdrawnAt.UnixMilli())
	}
	if e := ch.Escalation; e != nil {
		if !e.Manual {
			f = append(f, "escalated_steps", mustJSON(mergeSteps(rec.EscalatedSteps, e.Step)))
		}
		if len(e.To) > 0 {
			f = append(f, "escalated_to", mustJSON(uniqueUsers(rec.EscalatedTo, e.To)))
		}
		if len(e.Channels) > 0 {
			f = append(f, "escalated_channels", mustJSON(uniqueUsers(rec.EscalatedChannels, e.Channels)))
		}
		if e.Problem != "" {
			f = append(f, "escalation_error", joinProblem(rec.EscalationError, e.Problem))
		}
		if firstEscalation(rec, e) {
			f = append(f, "escalated_ms", e.At.UnixMilli())
		}
	}
	if ch.Reassignment != nil {
		f = append(f, "reassignments", mustJSON(append(slices.Clone(rec.Reassignments), *ch.Reassignment)))
	}
	if ch.Directive != nil {
		f = append(f, "directive", mustJSON(*ch.Directive))
	}
	if ch.RemindersDone > 0 {
		f = append(f, "reminders_done", ch.RemindersDone)
	}
	if r := ch.Reached; r != nil {
		f = append(f, r.field(), mustJSON(uniqueUsers(reachedOf(rec, *r), []string{r.To})))
	}
	return f
}

// Apply returns rec as it reads after Update writes ch to it: what the
// request hash holds, not the indexes, jobs or audit chains. The updated
// time is left as it was (Update stamps it with the store's clock). It lets
// code that decides changes be tested without Redis; a store test proves it
// agrees with what Redis holds.
func (ch *Change) Apply(rec Record) Record {
	out := rec
	if len(ch.Answers) > 0 {
		out.Answers = maps.Clone(rec.Answers)
		if out.Answers == nil {
			out.Answers = map[string]aah.Answer{}
		}
		for _, a := range ch.Answers {
			out.Answers[a.DecisionID] = a
		}
	}
	if ch.Status != "" {
		out.Status = ch.Status
	}
	if ch.Bump {
		out.Version++
	}
	if r := ch.Resolution; r != nil {
		out.Response = append([]byte(nil), r.Response...)
		out.ResolvedAt, out.ResolvedBy = fromMs(r.At.UnixMilli()), decodePerson(encodePerson(r.By))
		if r.Deliver {
			out.Delivery.State, out.Delivery.WebhookID = DeliveryPending, r.WebhookID
		}
	}
	if !ch.WithdrawnAt.IsZero() {
		out.WithdrawnAt = fromMs(ch.WithdrawnAt.UnixMilli())
	}
	if e := ch.Escalation; e != nil && !e.Manual {
		out.EscalatedSteps = mergeSteps(rec.EscalatedSteps, e.Step)
	}
	if e := ch.Escalation; e != nil {
		if len(e.To) > 0 {
			out.EscalatedTo = uniqueUsers(rec.EscalatedTo, e.To)
		}
		if len(e.Channels) > 0 {
			out.EscalatedChannels = uniqueUsers(rec.EscalatedChannels, e.Channels)
		}
		if e.Problem != "" {
			out.EscalationError = joinProblem(rec.EscalationError, e.Problem)
		}
		if firstEscalation(rec, e) {
			out.EscalatedAt = fromMs(e.At.UnixMilli())
		}
	}
	if ch.Reassignment != nil {
		out.Reassignments = decodeReassignments(mustJSON(append(slices.Clone(rec.Reassignments), *ch.Reassignment)))
	}
	if ch.Directive != nil {
		out.Directive = decodeDirective(mustJSON(*ch.Directive))
	}
	if ch.RemindersDone > 0 {
		out.RemindersDone = ch.RemindersDone
	}
	if r := ch.Reached; r != nil {
		list := uniqueUsers(reachedOf(rec, *r), []string{r.To})
		if r.Kind == JobEscalate {
			out.EscalationSent = withNumbered(rec.EscalationSent, r.N, list)
		} else {
			out.Reminded = withNumbered(rec.Reminded, r.N, list)
		}
	}
	closing := ch.Status != "" && !ch.Status.Open() && rec.Status.Open()
	switch {
	case closing:
		out.Timers = nil // every timer is cancelled as the request closes
	case len(ch.Timers) > 0:
		out.Timers = slices.Clone(rec.Timers)
		for _, tm := range ch.Timers {
			out.Timers = append(out.Timers, tm.ID)
		}
	}
	if !closing && rec.Status.Open() {
		if added := uniqueUsers(rec.IndexedReviewers, ch.AddReviewers); len(added) > len(rec.IndexedReviewers) {
			out.IndexedReviewers = added
		}
	}
	return out
}

func reachedOf(rec Record, r Reach) []string {
	if r.Kind == JobEscalate {
		return rec.EscalationSent[r.N]
	}
	return rec.Reminded[r.N]
}

func withNumbered(m map[int][]string, n int, list []string) map[int][]string {
	out := maps.Clone(m)
	if out == nil {
		out = map[int][]string{}
	}
	out[n] = list
	return out
}

// ManualStep is the escalation step key of the m-th hand-made escalation
// (Record.Reassignments[m]): negative, so it never names a data.escalation
// step, and its copies are recorded in EscalationSent under it like a timed
// step's. ManualIndex reads it back.
func ManualStep(m int) int { return -(m + 1) }

// ManualIndex is the Reassignments index of a hand-made escalation's step
// key; ok is false for a data.escalation step.
func ManualIndex(step int) (m int, ok bool) { return -step - 1, step < 0 }

// mergeSteps appends step to the applied steps unless it is there.
func mergeSteps(steps []int, step int) []int {
	if slices.Contains(steps, step) {
		return steps
	}
	return append(slices.Clone(steps), step)
}

func joinProblem(prev, problem string) string {
	if prev == "" {
		return problem
	}
	return prev + "; " + problem
}

// encodePerson writes a person as "<slack user id>|<name>"; decodePerson
// reads it. The system (no person) is "|".
func encodePerson(p aah.Person) string { return p.ID + "|" + p.Name }

// decodePerson reads "<slack user id>|<name>".
func decodePerson(s string) aah.Person {
	id, name, _ := strings.Cut(s, "|")
	return aah.Person{ID: id, Name: name}
}

// firstEscalation says e is the request's first applied escalation: it is
// stamped (At), reaches someone, and the request has no EscalatedAt yet.
func firstEscalation(rec Record, e *Escalation) bool {
	return rec.EscalatedAt.IsZero() && !e.At.IsZero() && (len(e.To) > 0 || len(e.Channels) > 0)
}

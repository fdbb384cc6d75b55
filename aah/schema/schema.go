// Package schema holds the JSON Schemas (draft 2020-12) of the AAH
// human-in-the-loop artifacts approvalbot reads and writes, and validates
// documents against them.
//
// The request schema describes what approvalbot accepts: every request the
// aah package's validator accepts is valid under it, while the validator
// checks more than a schema can (deadlines in the future, durations, unique
// ids, defaults among the options). The response schema describes the
// decision responses approvalbot emits.
package schema

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

// The schema documents. Callers must not modify them.
var (
	//go:embed decision-request.schema.json
	RequestSchemaJSON []byte
	//go:embed decision-response.schema.json
	ResponseSchemaJSON []byte
)

// The schemas' $id values.
const (
	RequestSchemaID  = "https://github.com/approvalbot/approvalbot/aah/schema/decision-request.schema.json"
	ResponseSchemaID = "https://github.com/approvalbot/approvalbot/aah/schema/decision-response.schema.json"
)

// Violation is one way a document breaks its schema.
type Violation struct {
	// Pointer is the JSON pointer (RFC 6901) of the offending value; "" is
	// the whole document. For a missing property it points where the
	// property should be.
	Pointer string `json:"pointer"`
	Message string `json:"message"`
}

// ValidationError lists every violation found in a document.
type ValidationError struct {
	Artifact   string // "decision request" or "decision response"
	Violations []Violation
}

func (e *ValidationError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s does not match its schema: ", e.Artifact)
	for i, v := range e.Violations {
		if i > 0 {
			b.WriteString("; ")
		}
		p := v.Pointer
		if p == "" {
			p = "(document)"
		}
		b.WriteString(p + ": " + v.Message)
	}
	return b.String()
}

type compiled struct {
	once   sync.Once
	id     string
	doc    []byte
	schema *jsonschema.Schema
	err    error
}

func (c *compiled) get() (*jsonschema.Schema, error) {
	c.once.Do(func() {
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(c.doc))
		if err != nil {
			c.err = fmt.Errorf("schema %s: %w", c.id, err)
			return
		}
		comp := jsonschema.NewCompiler()
		comp.DefaultDraft(jsonschema.Draft2020)
		if err := comp.AddResource(c.id, doc); err != nil {
			c.err = fmt.Errorf("schema %s: %w", c.id, err)
			return
		}
		c.schema, c.err = comp.Compile(c.id)
	})
	return c.schema, c.err
}

var (
	requestSchema  = &compiled{id: RequestSchemaID, doc: RequestSchemaJSON}
	responseSchema = &compiled{id: ResponseSchemaID, doc: ResponseSchemaJSON}
)

// ValidateRequest validates a decision/request document against the request
// schema. It returns nil when the document is valid, a *ValidationError
// listing every violation otherwise.
func ValidateRequest(doc []byte) error {
	return validate(requestSchema, "decision request", doc)
}

// ValidateResponse validates a decision/response document against the
// response schema. It returns nil when the document is valid, a
// *ValidationError listing every violation otherwise.
func ValidateResponse(doc []byte) error {
	return validate(responseSchema, "decision response", doc)
}

func validate(c *compiled, artifact string, raw []byte) error {
	sch, err := c.get()
	if err != nil {
		return err // the embedded schema is broken: a build defect
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var doc any
	if err := dec.Decode(&doc); err != nil {
		return &ValidationError{Artifact: artifact, Violations: []Violation{{Message: "not valid JSON: " + err.Error()}}}
	}
	if _, err := dec.Token(); err != io.EOF {
		return &ValidationError{Artifact: artifact, Violations: []Violation{{Message: "must hold exactly one JSON value"}}}
	}
	err = sch.Validate(asDoubles(doc))
	if err == nil {
		return nil
	}
	var verr *jsonschema.ValidationError
	if !errors.As(err, &verr) {
		return err
	}
	out := &ValidationError{Artifact: artifact}
	seen := map[Violation]bool{}
	for _, v := range violations(verr) {
		if !seen[v] {
			seen[v] = true
			out.Violations = append(out.Violations, v)
		}
	}
	sort.SliceStable(out.Violations, func(i, j int) bool {
		a, b := out.Violations[i], out.Violations[j]
		if a.Pointer != b.Pointer {
			return a.Pointer < b.Pointer
		}
		return a.Message < b.Message
	})
	return out
}

// asDoubles replaces every number in a decoded document by the IEEE 754
// double it reads as, the way aah.Parse (and most consumers) read numbers:
// 1.0000000000000000001 is the whole number 1 there, so it is here too.
// A number beyond the double range becomes ±1e400, still out of every
// bound. This also keeps the validator's exact arithmetic cheap on
// numbers like 1e9999999.
func asDoubles(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			x[k] = asDoubles(e)
		}
	case []any:
		for i, e := range x {
			x[i] = asDoubles(e)
		}
	case json.Number:
		f, err := strconv.ParseFloat(string(x), 64)
		switch {
		case math.IsInf(f, 1):
			return json.Number("1e400")
		case math.IsInf(f, -1):
			return json.Number("-1e400")
		case err == nil:
			return json.Number(strconv.FormatFloat(f, 'g', -1, 64))
		}
	}
	return v
}

var printer = message.NewPrinter(language.English)

// The RFC 3339 (section 5.6) pieces of the schemas' date and date-time
// patterns: two-digit fields in range, "." before a fraction, Z or ±hh:mm.
const (
	rfc3339Date    = `[0-9]{4}-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])`
	rfc3339Time    = `([01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](\.[0-9]+)?(Z|[+-]([01][0-9]|2[0-3]):[0-5][0-9])`
	dateOrDateTime = rfc3339Date + "(T" + rfc3339Time + ")?$"
)

// patternMessages says in words what each pattern of the schemas means.
var patternMessages = map[string]string{
	"[^\t\n\v\f\r \u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]": "must not be empty or blank",
	`^0\.`:                                         "must be an AAH 0.x version, e.g. 0.1",
	"^$|^" + dateOrDateTime:                        "must be a date (2026-03-01) or an RFC 3339 date-time with a time zone",
	"^" + dateOrDateTime:                           "must be a date (2026-02-17) or an RFC 3339 date-time with a time zone",
	`^$|^[A-Za-z0-9_.:/-]{1,128}$`:                 "must be 1-128 characters of letters, digits and _ . : / -",
	`^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$`:          "must be 1-128 characters of letters, digits and _ . : - starting with a letter or digit",
	`^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$`:            "must be 1-64 characters of letters, digits and _ . - starting with a letter or digit",
	"^$|^" + rfc3339Date + "T" + rfc3339Time + "$": "must be an ISO 8601 date-time with a time zone as RFC 3339 writes it, e.g. 2026-02-17T17:00:00Z",
	`^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]+)?(Z|[+-][0-9]{2}:[0-9]{2})$`: "must be an RFC 3339 date-time with a time zone, e.g. 2026-02-16T14:30:00Z",
	`^$|^[Hh][Tt][Tt][Pp][Ss]?://[^/?#]`:                      "must be an absolute https URL",
	`^$|^(?:[CGD][A-Z0-9]{2,20}|#?[a-z0-9][a-z0-9_-]{0,79})$`: "must be a Slack channel id (C…, G…, D…) or a channel name like #approvals",
	`^[UW][A-Z0-9]{2,20}$|@`:                                  "must be a Slack user id (U…/W…) or an email address",
	`^$|^[UW][A-Z0-9]{2,20}$|@`:                               "must be a Slack user id (U…/W…) or an email address",
	`^[UWS][A-Z0-9]{2,20}$|@`:                                 "must be a Slack user id (U…/W…), a user group id (S…) or an email address",
	`^S[A-Z0-9]{2,20}$`:                                       "must be a Slack user group id (S…)",
	`^[A-Za-z0-9][A-Za-z0-9 _.-]{0,39}$`:                      "must be 1-40 letters, digits, spaces and _ . - starting with a letter or digit",
	`^(human|agent):`:                                         "must be \"human:\" followed by a Slack user id, or \"agent:\" followed by an agent name",
}

// violations flattens the library's error tree to its leaves, the errors
// that say what is wrong where.
func violations(e *jsonschema.ValidationError) []Violation {
	ptr := pointer(e.InstanceLocation)
	switch k := e.ErrorKind.(type) {
	case *kind.AnyOf, *kind.OneOf:
		// A failed alternative: say what each branch wanted, in one line.
		var alts []string
		for _, c := range e.Causes {
			var parts []string
			for _, v := range violations(c) {
				parts = append(parts, strings.TrimPrefix(strings.TrimPrefix(v.Pointer, ptr), "/")+" "+v.Message)
			}
			alts = append(alts, strings.TrimSpace(strings.Join(parts, ", ")))
		}
		if len(alts) > 0 {
			return []Violation{{Pointer: ptr, Message: "must match one of: " + strings.Join(alts, "; or ")}}
		}
		return []Violation{{Pointer: ptr, Message: k.LocalizedString(printer)}}
	}
	if len(e.Causes) > 0 {
		var out []Violation
		for _, c := range e.Causes {
			out = append(out, violations(c)...)
		}
		return out
	}
	switch k := e.ErrorKind.(type) {
	case *kind.Required:
		out := make([]Violation, 0, len(k.Missing))
		for _, name := range k.Missing {
			out = append(out, Violation{Pointer: ptr + "/" + escape(name), Message: "is required"})
		}
		return out
	case *kind.FalseSchema:
		return []Violation{{Pointer: ptr, Message: "is not allowed here"}}
	case *kind.Pattern:
		if msg, ok := patternMessages[k.Want]; ok {
			return []Violation{{Pointer: ptr, Message: msg}}
		}
	}
	return []Violation{{Pointer: ptr, Message: e.ErrorKind.LocalizedString(printer)}}
}

func pointer(tokens []string) string {
	var b strings.Builder
	for _, t := range tokens {
		b.WriteString("/" + escape(t))
	}
	return b.String()
}

func escape(token string) string {
	return strings.ReplaceAll(strings.ReplaceAll(token, "~", "~0"), "/", "~1")
}

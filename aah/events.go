package aah

import "slices"

// EventTypes are the progress event types an agent can watch (GET
// /v1/events) or subscribe a callback to (extensions.events.types), in the
// order a request goes through them.
var EventTypes = []string{
	"input:requested", "input:received", "escalated", "reminded", "resolved", "expired", "withdrawn",
}

// EventSubscription is extensions.events: the request's progress events are
// POSTed to URL, signed like the decision response (docs/api.md, "Event
// callbacks").
type EventSubscription struct {
	URL string
	// Types are the event types to POST; empty means every type.
	Types []string
}

// Wants reports whether the subscription covers events of type t.
func (s EventSubscription) Wants(t string) bool {
	return len(s.Types) == 0 || slices.Contains(s.Types, t)
}

// eventSubscription parses extensions.events: an object with a url
// (required, checked like handoff.response_url) and optional types (known
// event types, no repeats). Other keys are refused, naming them: a typo
// ("type") must not silently subscribe to everything.
func (p *parser) eventSubscription(n node, r *Request) {
	if !p.object(n, false) {
		return
	}
	sub := &EventSubscription{}
	if m, ok := n.v.(map[string]any); ok {
		for k := range m {
			if k != "url" && k != "types" {
				p.fail(n.field(k), "is not a field of extensions.events (url, types)")
			}
		}
	}
	un := n.field("url")
	sub.URL = p.str(un, true)
	if sub.URL != "" {
		if err := checkCallbackURL(sub.URL, p.opts.AllowInsecureCallbacks || p.opts.Stored); err != nil {
			p.fail(un, "%v", err)
		}
	}
	tn := n.field("types")
	types := p.array(tn)
	if !tn.absent() && types != nil && len(types) == 0 {
		p.fail(tn, "must list at least one event type (omit it for all)")
	}
	for i := range types {
		en := tn.index(i)
		t := p.str(en, true)
		switch {
		case t == "":
		case !slices.Contains(EventTypes, t):
			p.fail(en, "unknown event type %q; one of %v", t, EventTypes)
		case slices.Contains(sub.Types, t):
			p.fail(en, "lists %q twice", t)
		default:
			sub.Types = append(sub.Types, t)
		}
	}
	r.Events = sub
}

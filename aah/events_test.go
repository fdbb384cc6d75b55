package aah_test

import (
	"reflect"
	"testing"

	"github.com/approvalbot/approvalbot/aah"
)

func TestParseEventSubscription(t *testing.T) {
	t.Parallel()
	sub := func(v string) edit { return set("extensions.events", js(v)) }
	bad := []struct {
		name   string
		edit   edit
		opts   func(*aah.ParseOptions)
		field  string
		substr string
	}{
		{"not an object", set("extensions.events", "https://a.example.com"), nil, "extensions.events", "must be an object"},
		{"no url", sub(`{"types":["resolved"]}`), nil, "extensions.events.url", "is required"},
		{"bad url", sub(`{"url":"not a url"}`), nil, "extensions.events.url", "must be an absolute URL"},
		{"http without the dev setting", sub(`{"url":"http://agent.example.com/ev"}`), nil, "extensions.events.url", "must use https"},
		{"ftp", sub(`{"url":"ftp://agent.example.com/ev"}`), nil, "extensions.events.url", `scheme "ftp"`},
		{"loopback", sub(`{"url":"https://127.0.0.1/ev"}`), nil, "extensions.events.url", "non-public address"},
		{"private", sub(`{"url":"https://10.1.2.3/ev"}`), nil, "extensions.events.url", "non-public address"},
		{"credentials", sub(`{"url":"https://u:p@agent.example.com/ev"}`), nil, "extensions.events.url", "credentials"},
		{"unknown type", sub(`{"url":"https://agent.example.com/ev","types":["input:received","approved"]}`), nil, "extensions.events.types[1]", `unknown event type "approved"`},
		{"type twice", sub(`{"url":"https://agent.example.com/ev","types":["resolved","resolved"]}`), nil, "extensions.events.types[1]", "twice"},
		{"empty types", sub(`{"url":"https://agent.example.com/ev","types":[]}`), nil, "extensions.events.types", "at least one"},
		{"types not an array", sub(`{"url":"https://agent.example.com/ev","types":"resolved"}`), nil, "extensions.events.types", "must be an array"},
		{"type not a string", sub(`{"url":"https://agent.example.com/ev","types":[1]}`), nil, "extensions.events.types[0]", "must be a string"},
		{"unknown key", sub(`{"url":"https://agent.example.com/ev","type":["resolved"]}`), nil, "extensions.events.type", "is not a field"},
		// An empty key is a member like any other, never an array index.
		{"empty key", sub(`{"url":"https://agent.example.com/ev","":1}`), nil, "extensions.events.", "is not a field"},
	}
	for _, tc := range bad {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			opts := aah.ParseOptions{Now: seedNow}
			if tc.opts != nil {
				tc.opts(&opts)
			}
			matchProblems(t, problemsOf(t, mutated(t, tc.edit), opts), one(tc.field, tc.substr))
		})
	}

	good := []struct {
		name string
		edit edit
		opts func(*aah.ParseOptions)
		want *aah.EventSubscription
	}{
		{"absent", set("extensions.other", "x"), nil, nil},
		{"all types", sub(`{"url":"https://agent.example.com/ev"}`), nil, &aah.EventSubscription{URL: "https://agent.example.com/ev"}},
		{"some types", sub(`{"url":"https://agent.example.com/ev","types":["input:received","resolved"]}`), nil,
			&aah.EventSubscription{URL: "https://agent.example.com/ev", Types: []string{"input:received", "resolved"}}},
		{"http loopback in dev", sub(`{"url":"http://127.0.0.1:9000/ev"}`), allowInsecure, &aah.EventSubscription{URL: "http://127.0.0.1:9000/ev"}},
	}
	for _, tc := range good {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			opts := aah.ParseOptions{Now: seedNow}
			if tc.opts != nil {
				tc.opts(&opts)
			}
			r := mustParse(t, mutated(t, tc.edit), opts)
			if !reflect.DeepEqual(r.Events, tc.want) {
				t.Errorf("Events = %+v, want %+v", r.Events, tc.want)
			}
		})
	}
}

func TestEventSubscriptionWants(t *testing.T) {
	all := aah.EventSubscription{URL: "https://x"}
	some := aah.EventSubscription{URL: "https://x", Types: []string{"resolved"}}
	if !all.Wants("reminded") || !some.Wants("resolved") || some.Wants("reminded") {
		t.Errorf("Wants: all=%v some(resolved)=%v some(reminded)=%v", all.Wants("reminded"), some.Wants("resolved"), some.Wants("reminded"))
	}
}

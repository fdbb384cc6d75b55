package handlers

import (
	"context"

	"github.com/approvalbot/approvalbot/aah"
	"github.com/approvalbot/approvalbot/approval"
)

// The verbs of noDecisions (commands_test.go): nothing to record.

func (noDecisions) RejectWith(context.Context, string, []string, aah.Person, approval.Rejection) (approval.Outcome, error) {
	return approval.Outcome{}, nil
}
func (noDecisions) Modify(context.Context, string, string, aah.Person, map[string]any, string) (approval.Outcome, error) {
	return approval.Outcome{}, nil
}
func (noDecisions) Direct(context.Context, string, aah.Person, aah.Verb, string) (approval.Outcome, error) {
	return approval.Outcome{}, nil
}
func (noDecisions) Reassign(context.Context, string, aah.Person, string, string) (approval.Outcome, error) {
	return approval.Outcome{}, nil
}
func (noDecisions) CheckVerb(context.Context, string, string, aah.Person, aah.Verb) error { return nil }

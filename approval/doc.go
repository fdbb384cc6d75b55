// Package approval is approvalbot's core: it owns the lifecycle of a
// decision request, every rule about it, and every change of its state.
// Everything else is an adapter around it: Slack's clicks and modals
// (handlers), the agent API (webhook), the deadline job (bot), the
// Slack-outbound jobs (slackout), and the store (store), which it reaches
// through the narrow Storage interface. Each transition is one optimistic
// transaction (Storage.Update): what it writes (the status, answers, audit
// entries, the response and its delivery, jobs to schedule or cancel) is
// written together or not at all, so repeats and races are harmless.
//
// The lifecycle:
//
//	submission ──create──▶ pending (or refused by the workspace's policy)
//	pending ──answer──▶ partial ──submit / last answer──▶ resolved
//	   │                   │
//	   └──escalate──▶ escalated (still open: answers and submit as above;
//	                   the status stays escalated, Record.Escalated and
//	                   EscalatedAt say so after it closed)
//	open ──deadline──▶ resolved or expired   open ──withdraw──▶ withdrawn
//	open ──defer / change_plan / abort──▶ resolved (with a directive)
//
// Where each transition and rule lives:
//
//	transition or rule                        file            function
//	submission → pending (the policy floor,   create.go       Core.Create, SignOffFloor
//	  someone to decide, its timers)
//	who may act (reviewers, groups, roles,    authorize.go    Core.authorize, Policy
//	  admins, escalation targets)
//	sign-off: quorum, roles, veto,            signoff.go      grant.answer, grant.mayDecide
//	  self-approval, required reasons
//	answer → partial (or resolved)            answer.go       Core.Answer, AnswerAll, Reject,
//	                                                          RejectAll, AnswerWithComment
//	reject with reasons (picked from the      reject.go       Core.Reject, RejectAll, RejectWith
//	  agent's reject_reasons, own words)
//	modify: approve with edited parameters    modify.go       Core.Modify
//	  (not on gated decisions)
//	defer, change_plan, abort → resolved      directive.go    Core.Direct
//	  with Record.Directive
//	escalate by hand → escalated (copies      reassign.go     Core.Reassign
//	  under a hand-made step key)
//	comment                                   answer.go       Core.Comment
//	submit → resolved (defaults on submit,    resolve.go      Core.Submit, SubmitWithComment
//	  the submitter's overall comment)
//	the response artifact and its delivery    response.go     Core.closeWith
//	deadline → resolved or expired            expire.go       Core.Deadline
//	escalate → escalated (or step failed)     escalate.go     Core.Escalate, EscalationFailed,
//	                                                          ResolveTarget
//	withdraw → withdrawn                      withdraw.go     Core.Withdraw
//	which timers a request gets               timers.go       Timers, ReminderPlan
//	reminder bookkeeping                      remind.go       Core.Reminded, Core.Reached
//	refusals (audited) and the shared         approval.go     Core.act, Core.Check, Refusal
//	  update of every reviewer action
//	what the message shows of a record        view.go         View, ListItem
//	  (and the request it follows up)                         FollowUpOf
//	standing approvals: who may grant, what   grants.go,      Core.Grant, RevokeGrant, Grants;
//	  a grant covers (matched in the create     grants_match.go grantMatcher
//	  transaction), who may revoke
//	decision metrics: first answer, closes    metrics.go      Core.update, Metrics
//	  by outcome (once, by the committer)
//
// What closing a request cancels (its timers; its post when never posted)
// and which jobs follow a change (message sync, Home tabs, copies) are the
// store's bookkeeping of the change (store.Change), not rules of the core.
package approval

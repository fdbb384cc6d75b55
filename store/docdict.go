package store

// docDict1 is the preset dictionary of stored documents (doccodec.go: S2
// blocks, and the DEFLATE ones earlier commits wrote): the decision-request
// vocabulary every request shares (the property names of
// aah/schema/decision-request.schema.json, its enums, the usual nesting),
// and no request's content. With it, examples/marketing-strategy.json (seed
// 000's example, compacted) stores in 650 B instead of 1,593 B (S2; DEFLATE
// at BestSpeed: 537 B).
//
// Stored documents can be read only with the very dictionary they were
// written with: this one must never change (TestDocDictPinned holds it). A
// better dictionary gets a new leading byte, and decodeDoc keeps this one.
const docDict1 = `{"aah_version":"0.1","artifact":{"created_at":"","id":"","parent_artifact_ids":[],"title":"","type":` +
	`"decision/request"},"source":{"agent_id":"","agent_name":"","agent_role":"","task_id":"","tool_name"` +
	`:""},"extensions":{"events":{"types":["input:requested","input:received","escalated","reminded","res` +
	`olved","expired","withdrawn"],"url":"https://"},"slack":{"allow_self_approval":false,"channel":"#","` +
	`quorum":1,"required_roles":[],"reviewer_groups":[],"reviewers":[]}},"content":{"body":{"data":{"bloc` +
	`king":[{"description":"","task_id":""}],"context":"","deadline":"","decisions":[{"default":null,"des` +
	`cription":"","id":"d1","options":[{"label":"","value":""}],"prompt":"","reject_reasons":[],"require_` +
	`reason":false,"required":true,"type":"choice"},{"default":true,"description":"","id":"d2","prompt":"` +
	`","required":false,"type":"approval"}],"editable":{"enum":[],"max":0,"min":0,"type":"string"},"escal` +
	`ation":{"after":"24h","to":""},"estimated_cost":{"cost_unit":""},"proposed_action":{"action_key":"",` +
	`"action_type":"","expected_outcome":"","parameters":{},"reversible":true},"reminders":{"after":"","e` +
	`very":""},"responses":["approve","reject","modify","defer","change_plan","escalate","abort"],"risk_a` +
	`ssessment":{"confidence":0.9,"potential_consequences":[],"reversibility":"fully","risk_factors":[],"` +
	`risk_level":"low"}},"schema":"aah:decision/request@1.0"},"media_type":"application/vnd.aah.decision-` +
	`request+json"},"handoff":{"expects_response":true,"priority":"high","response_deadline":"","response` +
	`_url":"https://","target_role":"human"},"lifecycle":{"on_deadline":"expire","status":"pending","visi` +
	`bility":"team"}}`

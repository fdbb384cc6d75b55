// Package slackemu is an in-process emulator of the Slack Web API, for
// tests and for approvalbot's no-config local mode.
//
// A *Server is an http.Handler answering "/api/<method>" with Slack's
// response shapes, so an unmodified slack-go client works against it,
// either over a listener:
//
//	srv := httptest.NewServer(emu)
//	api := slack.New(emu.Token(), slack.OptionAPIURL(srv.URL+"/api/"))
//
// or fully in-process, without any listener:
//
//	api := slack.New(emu.Token(), slack.OptionAPIURL(emu.APIURL()), slack.OptionHTTPClient(emu.Client()))
//
// The server keeps the state a bot can observe (messages per channel and
// DM, ephemerals, modals and Home tabs), validates Block Kit payloads the
// way Slack does (ValidateBlocks, ValidateView), records every call (Calls,
// CallsTo), lets tests wait for state without sleeping (WaitFor,
// WaitForCalls, WaitForMessages), streams changes (Subscribe), and injects
// failures: Slack errors, 429s with or without Retry-After, 5xx statuses,
// answers lost after Slack acted (a 5xx or a dropped connection once the
// message is posted: InjectFailAfterEffect), and Slack's per-channel
// posting pace of one message per second.
//
// Supported methods: auth.test, chat.postMessage, chat.update,
// chat.delete, chat.getPermalink, chat.postEphemeral, conversations.open,
// conversations.history, conversations.replies, conversations.info,
// users.info, users.lookupByEmail, usergroups.users.list, views.open,
// views.push, views.update and views.publish, and apps.connections.open
// (with the app-level token AppToken), whose ws:// URL serves Socket Mode
// on a loopback listener (see socket.go; Close stops it). Other methods
// answer {"ok":false,"error":"unknown_method"}.
package slackemu

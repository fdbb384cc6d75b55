package slackemu

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// RenderText renders Block Kit blocks as readable plain text for logs, one
// line per block or field: headers as "▌ Title", sections' text and
// fields, context elements joined by " · ", actions as
// "[Approve] [Reject] [select: Launch next Monday ▾] [date: 2026-02-17]",
// dividers as a rule of "─". Slack mrkdwn tokens are simplified: dates
// show their fallback text, "<@U123>" becomes "@U123", links their label.
// Invalid JSON renders as "". See Server.RenderText to resolve names.
func RenderText(blocks json.RawMessage) string {
	return renderer{}.blocks(blocks)
}

// RenderText is like the package function RenderText, but shows users,
// channels and user groups the workspace knows by name ("@alice",
// "#approvals", "@leads").
func (s *Server) RenderText(blocks json.RawMessage) string {
	return renderer{dir: s.dir}.blocks(blocks)
}

// RenderMessage renders m for logs: its blocks if it has any, else its
// text, with mrkdwn tokens simplified and names resolved.
func (s *Server) RenderMessage(m Message) string {
	if len(m.Blocks) > 0 && string(m.Blocks) != "[]" {
		return s.RenderText(m.Blocks)
	}
	return renderer{dir: s.dir}.mrkdwn(m.Text)
}

// divider is how a divider block is rendered.
var divider = strings.Repeat("─", 40)

// renderer renders blocks; dir, if set, resolves ids to names.
type renderer struct {
	dir *directory
}

func (r renderer) blocks(raw json.RawMessage) string {
	x, err := decodeJSON(raw)
	list, ok := x.([]any)
	if err != nil || !ok {
		return ""
	}
	var lines []string
	for _, b := range list {
		if o, ok := b.(obj); ok {
			if l := r.block(o); l != "" {
				lines = append(lines, l)
			}
		}
	}
	return strings.Join(lines, "\n")
}

// block renders one block, possibly on several lines.
func (r renderer) block(b obj) string {
	switch b["type"] {
	case "header":
		return "▌ " + r.text(b["text"])
	case "section":
		var lines []string
		if t := r.text(b["text"]); t != "" {
			lines = append(lines, t)
		}
		fields, _ := b["fields"].([]any)
		for _, f := range fields {
			lines = append(lines, strings.ReplaceAll(r.text(f), "\n", " "))
		}
		if acc, ok := b["accessory"].(obj); ok {
			if c := r.control(acc); c != "" {
				lines = append(lines, c)
			}
		}
		return strings.Join(lines, "\n")
	case "context":
		var parts []string
		elems, _ := b["elements"].([]any)
		for _, e := range elems {
			if t := r.contextElement(e); t != "" {
				parts = append(parts, t)
			}
		}
		return strings.Join(parts, " · ")
	case "actions":
		var parts []string
		elems, _ := b["elements"].([]any)
		for _, e := range elems {
			if o, ok := e.(obj); ok {
				parts = append(parts, r.control(o))
			}
		}
		return strings.Join(parts, " ")
	case "divider":
		return divider
	case "input":
		el, _ := b["element"].(obj)
		return r.text(b["label"]) + ": " + r.control(el)
	case "image":
		return r.control(b)
	case "rich_text":
		return r.richText(b["elements"])
	}
	return ""
}

func (r renderer) contextElement(e any) string {
	o, _ := e.(obj)
	if o["type"] == "image" {
		return r.control(o)
	}
	return r.text(o)
}

// text renders a text object (plain_text or mrkdwn).
func (r renderer) text(x any) string {
	o, _ := x.(obj)
	s, _ := o["text"].(string)
	if o["type"] == "mrkdwn" {
		return r.mrkdwn(s)
	}
	return s
}

// optionText returns the text of an option object.
func (r renderer) optionText(x any) string {
	o, _ := x.(obj)
	return r.text(o["text"])
}

// control renders an element as "[…]".
func (r renderer) control(e obj) string {
	str := func(key string) string { s, _ := e[key].(string); return s }
	placeholder := r.text(e["placeholder"])
	orPlaceholder := func(v string) string {
		if v != "" {
			return v
		}
		return placeholder
	}
	switch t, _ := e["type"].(string); t {
	case "button":
		return "[" + r.text(e["text"]) + "]"
	case "static_select", "external_select":
		return "[select: " + orPlaceholder(r.optionText(e["initial_option"])) + " ▾]"
	case "multi_static_select", "multi_external_select":
		return "[select: " + orPlaceholder(r.optionList(e["initial_options"])) + " ▾]"
	case "users_select":
		return "[user: " + orPlaceholder(r.ref("@", str("initial_user"))) + " ▾]"
	case "conversations_select", "channels_select":
		id := str("initial_conversation") + str("initial_channel")
		return "[channel: " + orPlaceholder(r.ref("#", id)) + " ▾]"
	case "multi_users_select", "multi_conversations_select", "multi_channels_select":
		return "[" + strings.TrimPrefix(strings.TrimSuffix(t, "_select"), "multi_") + "s: " + placeholder + " ▾]"
	case "overflow":
		return "[⋯]"
	case "datepicker":
		return "[date: " + orPlaceholder(str("initial_date")) + "]"
	case "timepicker":
		return "[time: " + orPlaceholder(str("initial_time")) + "]"
	case "datetimepicker":
		v := ""
		if n, ok := e["initial_date_time"].(json.Number); ok {
			if secs, err := n.Int64(); err == nil {
				v = time.Unix(secs, 0).UTC().Format("2006-01-02 15:04 UTC")
			}
		}
		return "[datetime: " + orPlaceholder(v) + "]"
	case "checkboxes", "radio_buttons":
		return r.choices(e, t == "checkboxes")
	case "plain_text_input":
		return "[text: " + orPlaceholder(str("initial_value")) + "]"
	case "number_input":
		return "[number: " + orPlaceholder(str("initial_value")) + "]"
	case "email_text_input":
		return "[email: " + orPlaceholder(str("initial_value")) + "]"
	case "url_text_input":
		return "[url: " + orPlaceholder(str("initial_value")) + "]"
	case "image":
		return "[image: " + str("alt_text") + "]"
	default:
		return "[" + t + "]"
	}
}

// optionList joins the texts of an array of options.
func (r renderer) optionList(x any) string {
	list, _ := x.([]any)
	texts := make([]string, 0, len(list))
	for _, o := range list {
		texts = append(texts, r.optionText(o))
	}
	return strings.Join(texts, ", ")
}

// choices renders checkboxes as "[☑ A] [☐ B]" and radio buttons as
// "(•) A ( ) B".
func (r renderer) choices(e obj, checkboxes bool) string {
	selected := map[string]bool{}
	initial, _ := e["initial_options"].([]any)
	if o, ok := e["initial_option"]; ok {
		initial = append(initial, o)
	}
	for _, x := range initial {
		o, _ := x.(obj)
		v, _ := o["value"].(string)
		selected[v] = true
	}
	opts, _ := e["options"].([]any)
	parts := make([]string, 0, len(opts))
	for _, x := range opts {
		o, _ := x.(obj)
		v, _ := o["value"].(string)
		text := r.optionText(o)
		switch {
		case checkboxes && selected[v]:
			parts = append(parts, "[☑ "+text+"]")
		case checkboxes:
			parts = append(parts, "[☐ "+text+"]")
		case selected[v]:
			parts = append(parts, "(•) "+text)
		default:
			parts = append(parts, "( ) "+text)
		}
	}
	return strings.Join(parts, " ")
}

// richText flattens rich text elements into text.
func (r renderer) richText(x any) string {
	list, _ := x.([]any)
	var sb strings.Builder
	for _, e := range list {
		o, _ := e.(obj)
		switch o["type"] {
		case "rich_text_list":
			items, _ := o["elements"].([]any)
			for _, it := range items {
				sb.WriteString("• " + r.richText([]any{it}) + "\n")
			}
		case "rich_text_section", "rich_text_preformatted", "rich_text_quote":
			sb.WriteString(r.richInline(o["elements"]))
			sb.WriteString("\n")
		}
	}
	return strings.TrimRight(sb.String(), "\n")
}

// richInline renders the inline elements of a rich text section.
func (r renderer) richInline(x any) string {
	list, _ := x.([]any)
	var sb strings.Builder
	for _, e := range list {
		o, _ := e.(obj)
		str := func(key string) string { s, _ := o[key].(string); return s }
		switch o["type"] {
		case "text":
			sb.WriteString(str("text"))
		case "link":
			sb.WriteString(firstNonEmpty(str("text"), str("url")))
		case "user":
			sb.WriteString(r.ref("@", str("user_id")))
		case "channel":
			sb.WriteString(r.ref("#", str("channel_id")))
		case "usergroup":
			sb.WriteString(r.ref("@", str("usergroup_id")))
		case "emoji":
			sb.WriteString(":" + str("name") + ":")
		case "broadcast":
			sb.WriteString("@" + str("range"))
		case "date":
			sb.WriteString(str("fallback"))
		}
	}
	return sb.String()
}

// ref renders a user, channel or user group id with its name when known,
// else as prefix+id; "" stays "".
func (r renderer) ref(prefix, id string) string {
	if id == "" {
		return ""
	}
	if r.dir != nil {
		if u, ok := r.dir.user(id); ok && u.Name != "" {
			return "@" + u.Name
		}
		if c, ok := r.dir.channelsByID[id]; ok {
			return "#" + c.Name
		}
		if g, ok := r.dir.groupsByID[id]; ok {
			return "@" + g.Handle
		}
	}
	return prefix + id
}

// mrkdwnToken matches Slack's angle-bracket tokens: <@U1>, <#C1|name>,
// <!here>, <!date^…|fallback>, <https://…|label>.
var mrkdwnToken = regexp.MustCompile(`<([^<>]+)>`)

// mrkdwn simplifies Slack mrkdwn tokens and unescapes &lt; &gt; &amp;.
func (r renderer) mrkdwn(s string) string {
	s = mrkdwnToken.ReplaceAllStringFunc(s, func(tok string) string {
		body, label, hasLabel := strings.Cut(tok[1:len(tok)-1], "|")
		switch {
		case strings.HasPrefix(body, "@"):
			if hasLabel {
				return "@" + strings.TrimPrefix(label, "@")
			}
			return r.ref("@", body[1:])
		case strings.HasPrefix(body, "#"):
			if hasLabel {
				return "#" + label
			}
			return r.ref("#", body[1:])
		case strings.HasPrefix(body, "!subteam^"):
			if hasLabel {
				return "@" + strings.TrimPrefix(label, "@")
			}
			return r.ref("@", strings.TrimPrefix(body, "!subteam^"))
		case strings.HasPrefix(body, "!date^"):
			if hasLabel {
				return label
			}
			secs, _, _ := strings.Cut(strings.TrimPrefix(body, "!date^"), "^")
			if n, err := strconv.ParseInt(secs, 10, 64); err == nil {
				return time.Unix(n, 0).UTC().Format("2006-01-02 15:04 UTC")
			}
			return body
		case strings.HasPrefix(body, "!"):
			return "@" + firstNonEmpty(label, body[1:])
		case hasLabel:
			if strings.HasPrefix(body, "mailto:") || strings.HasSuffix(body, label) {
				return label
			}
			return fmt.Sprintf("%s (%s)", label, body)
		default:
			return body
		}
	})
	return strings.NewReplacer("&lt;", "<", "&gt;", ">", "&amp;", "&").Replace(s)
}

func firstNonEmpty(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

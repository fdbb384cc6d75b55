package sandbox

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"time"
)

// blockList is a surface's blocks, decoded generically: payloads echo them
// as the bot sent them, plus the ids Slack fills in.
type blockList []map[string]any

// decodeBlocks decodes a JSON array of blocks and gives every block a
// block_id and every interactive element an action_id, generating the ones
// the bot left out as Slack does (short strings, stable for the same
// content), so the page and the payloads name each control alike.
func decodeBlocks(raw json.RawMessage) (blockList, error) {
	if len(raw) == 0 {
		return blockList{}, nil
	}
	var list blockList
	if err := json.Unmarshal(raw, &list); err != nil {
		return nil, fmt.Errorf("decode blocks: %w", err)
	}
	for i, b := range list {
		if id, _ := b["block_id"].(string); id == "" {
			b["block_id"] = shortID(i, b)
		}
		for j, el := range elementsOf(b) {
			if id, _ := el["action_id"].(string); id == "" && interactive(el) {
				el["action_id"] = shortID(i, j, el)
			}
		}
	}
	return list, nil
}

// viewBlocks decodes the blocks of a view object (see decodeBlocks).
func viewBlocks(view json.RawMessage) (blockList, error) {
	var v struct {
		Blocks json.RawMessage `json:"blocks"`
	}
	if err := json.Unmarshal(view, &v); err != nil {
		return nil, fmt.Errorf("decode view: %w", err)
	}
	return decodeBlocks(v.Blocks)
}

func shortID(parts ...any) string {
	sum := sha256.Sum256(fmt.Append(nil, parts...))
	return base64.RawURLEncoding.EncodeToString(sum[:])[:5]
}

// elementsOf returns the elements of a block that can carry an action:
// an actions block's elements, a section's accessory, an input's element.
func elementsOf(b map[string]any) []map[string]any {
	var out []map[string]any
	switch b["type"] {
	case "actions":
		list, _ := b["elements"].([]any)
		for _, x := range list {
			if el, ok := x.(map[string]any); ok {
				out = append(out, el)
			}
		}
	case "section":
		if el, ok := b["accessory"].(map[string]any); ok {
			out = append(out, el)
		}
	case "input":
		if el, ok := b["element"].(map[string]any); ok {
			out = append(out, el)
		}
	}
	return out
}

func interactive(el map[string]any) bool {
	t, _ := el["type"].(string)
	return t != "image" && t != ""
}

// find returns the block and element named by blockID and actionID.
func (bl blockList) find(blockID, actionID string) (block, element map[string]any, ok bool) {
	for _, b := range bl {
		if b["block_id"] != blockID {
			continue
		}
		for _, el := range elementsOf(b) {
			if el["action_id"] == actionID && interactive(el) {
				return b, el, true
			}
		}
	}
	return nil, nil, false
}

// entered is what a person set a control to in the page: the text of an
// input, the values picked in a menu, a date or a time.
type entered struct {
	Value    *string  `json:"value,omitempty"`
	Selected []string `json:"selected,omitempty"`
	Date     string   `json:"date,omitempty"`
	Time     string   `json:"time,omitempty"`
	// DateTime is a datetimepicker's moment in unix seconds, as Slack
	// sends it (selected_date_time).
	DateTime *int64 `json:"date_time,omitempty"`
}

// pageState is what the page sends for a surface's controls, by block_id
// and action_id, as Slack's client keeps it.
type pageState map[string]map[string]entered

func (ps pageState) get(blockID, actionID string) (entered, bool) {
	e, ok := ps[blockID][actionID]
	return e, ok
}

// stateValues builds a surface's state.values: every stateful element with
// the value the person gave it, else its initial value, else none.
func (bl blockList) stateValues(ps pageState, only func(b map[string]any) bool) (map[string]any, error) {
	values := map[string]any{}
	for _, b := range bl {
		if only != nil && !only(b) {
			continue
		}
		bid, _ := b["block_id"].(string)
		for _, el := range elementsOf(b) {
			aid, _ := el["action_id"].(string)
			e, set := ps.get(bid, aid)
			v, stateful, err := stateOf(el, e, set)
			if err != nil {
				return nil, fmt.Errorf("block %s, action %s: %w", bid, aid, err)
			}
			if !stateful {
				continue
			}
			if values[bid] == nil {
				values[bid] = map[string]any{}
			}
			values[bid].(map[string]any)[aid] = v
		}
	}
	return values, nil
}

// stateOf is one element's entry in state.values; stateful is false for
// elements without state (buttons, overflow menus).
func stateOf(el map[string]any, e entered, set bool) (v map[string]any, stateful bool, err error) {
	typ, _ := el["type"].(string)
	v = map[string]any{"type": typ}
	switch typ {
	case "static_select", "radio_buttons":
		var opt any
		if set {
			if opt, err = pickOne(el, e.Selected); err != nil {
				return nil, true, err
			}
		} else {
			opt = el["initial_option"]
		}
		v["selected_option"] = opt
	case "users_select":
		var user any = el["initial_user"]
		if set {
			user = nil
			if len(e.Selected) > 0 && e.Selected[0] != "" {
				user = e.Selected[0]
			}
		}
		v["selected_user"] = user
	case "multi_static_select", "checkboxes":
		var opts any = []any{}
		if set {
			if opts, err = pick(el, e.Selected); err != nil {
				return nil, true, err
			}
		} else if initial, ok := el["initial_options"].([]any); ok {
			opts = initial
		}
		v["selected_options"] = opts
	case "datepicker":
		v["selected_date"] = pickString(set, e.Date, el["initial_date"])
		if s, _ := v["selected_date"].(string); s != "" {
			if _, perr := time.Parse(time.DateOnly, s); perr != nil {
				return nil, true, fmt.Errorf("%q is not a date", s)
			}
		}
	case "timepicker":
		v["selected_time"] = pickString(set, e.Time, el["initial_time"])
	case "datetimepicker":
		var moment any = el["initial_date_time"]
		if set {
			moment = nil
			if e.DateTime != nil {
				moment = *e.DateTime
			}
		}
		v["selected_date_time"] = moment
	case "plain_text_input", "number_input", "email_text_input", "url_text_input":
		var val any = nil
		switch {
		case set && e.Value != nil && *e.Value != "":
			val = *e.Value
		case !set:
			if s, _ := el["initial_value"].(string); s != "" {
				val = s
			}
		}
		v["value"] = val
	default:
		return nil, false, nil
	}
	return v, true, nil
}

func pickString(set bool, given string, initial any) any {
	if set {
		if given == "" {
			return nil
		}
		return given
	}
	if s, _ := initial.(string); s != "" {
		return s
	}
	return nil
}

// options lists a menu's options, those in option groups included.
func options(el map[string]any) []map[string]any {
	var out []map[string]any
	add := func(list any) {
		items, _ := list.([]any)
		for _, x := range items {
			if o, ok := x.(map[string]any); ok {
				out = append(out, o)
			}
		}
	}
	add(el["options"])
	groups, _ := el["option_groups"].([]any)
	for _, g := range groups {
		if gm, ok := g.(map[string]any); ok {
			add(gm["options"])
		}
	}
	return out
}

// pick returns the option objects with the given values, which must be
// options of the element.
func pick(el map[string]any, values []string) ([]any, error) {
	opts := options(el)
	out := make([]any, 0, len(values))
	for _, v := range values {
		found := false
		for _, o := range opts {
			if o["value"] == v {
				out = append(out, o)
				found = true
				break
			}
		}
		if !found {
			return nil, fmt.Errorf("%q is not one of the options", v)
		}
	}
	return out, nil
}

func pickOne(el map[string]any, values []string) (any, error) {
	if len(values) == 0 {
		return nil, nil
	}
	list, err := pick(el, values[:1])
	if err != nil {
		return nil, err
	}
	return list[0], nil
}

// actionObject is an element of a block_actions payload's "actions": the
// element as the person used it.
func actionObject(block, el map[string]any, e entered, now time.Time) (map[string]any, error) {
	typ, _ := el["type"].(string)
	a := map[string]any{"type": typ, "block_id": block["block_id"], "action_id": el["action_id"], "action_ts": slackTS(now)}
	copyKeys(a, el, "text", "value", "style", "placeholder", "initial_option", "initial_options", "initial_date", "initial_time",
		"initial_date_time")
	switch typ {
	case "button":
		delete(a, "placeholder")
	case "overflow":
		opt, err := pickOne(el, e.Selected)
		if err != nil || opt == nil {
			return nil, fmt.Errorf("overflow: pick an option: %v", err)
		}
		a["selected_option"] = opt
	default:
		v, stateful, err := stateOf(el, e, true)
		if err != nil {
			return nil, err
		}
		if !stateful {
			return nil, fmt.Errorf("elements of type %q are not emulated", typ)
		}
		for k, x := range v {
			a[k] = x
		}
	}
	return a, nil
}

func copyKeys(dst, src map[string]any, keys ...string) {
	for _, k := range keys {
		if v, ok := src[k]; ok {
			dst[k] = v
		}
	}
}

package slackemu

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// Element limits enforced by the validator.
const (
	maxButtonText      = 75
	maxButtonValue     = 2000
	maxURL             = 3000
	maxPlaceholder     = 150
	maxConfirmTitle    = 100
	maxConfirmText     = 300
	maxConfirmButton   = 30
	maxOptionText      = 75
	maxOptionValue     = 150
	maxOptionDesc      = 75
	maxSelectOptions   = 100
	maxOverflowOptions = 5
	maxChoiceOptions   = 10 // checkboxes and radio_buttons
	maxTextInputLength = 3000
)

// Where each element type may appear: in section accessories ("section"),
// actions blocks ("actions") and input blocks ("input").
var (
	selectTypes = []string{
		"static_select", "multi_static_select", "external_select", "multi_external_select",
		"users_select", "multi_users_select", "conversations_select", "multi_conversations_select",
		"channels_select", "multi_channels_select",
	}
	choiceTypes   = []string{"datepicker", "timepicker", "datetimepicker", "checkboxes", "radio_buttons"}
	elementBlocks = map[string]map[string]bool{}
)

func init() {
	allow := func(blocks []string, types ...string) {
		for _, t := range types {
			if elementBlocks[t] == nil {
				elementBlocks[t] = map[string]bool{}
			}
			for _, b := range blocks {
				elementBlocks[t][b] = true
			}
		}
	}
	all := []string{"section", "actions", "input"}
	allow(all, selectTypes...)
	allow(all, choiceTypes...)
	allow([]string{"section", "actions"}, "button", "overflow")
	allow([]string{"section"}, "image")
	allow([]string{"input"}, "plain_text_input", "number_input", "email_text_input", "url_text_input")
}

// element validates an interactive (or image) element inside a block of
// type blockType; actionIDs collects the block's action_ids.
func (v *validator) element(ptr string, x any, blockType string, actionIDs map[string]bool) {
	e, ok := v.object(ptr, x)
	if !ok {
		return
	}
	typ, ok := v.requiredString(ptr, e, "type")
	if !ok {
		return
	}
	places, known := elementBlocks[typ]
	if !known {
		v.addf(ptr+"/type", "unsupported element type %q", typ)
		return
	}
	if !places[blockType] {
		v.addf(ptr+"/type", "element type %q is not allowed in %q blocks", typ, blockType)
		return
	}
	if id, ok := v.str(ptr, e, "action_id"); ok {
		switch {
		case id == "":
			v.add(ptr+"/action_id", "must be more than 0 characters")
		case utf8.RuneCountInString(id) > maxActionID:
			v.tooLong(ptr+"/action_id", maxActionID)
		case actionIDs[id]:
			v.addf(ptr+"/action_id", "non-unique action_id %q", id)
		}
		actionIDs[id] = true
	}
	v.optionalText(ptr, e, "placeholder", true, maxPlaceholder)
	if c, ok := e["confirm"]; ok {
		v.confirm(ptr+"/confirm", c)
	}
	if strings.HasPrefix(typ, "multi_") {
		if n, ok := v.integer(ptr, e, "max_selected_items"); ok && n < 1 {
			v.add(ptr+"/max_selected_items", "must be greater than or equal to 1")
		}
	}

	switch typ {
	case "button":
		v.button(ptr, e)
	case "static_select", "multi_static_select":
		v.staticSelect(ptr, e, typ == "multi_static_select")
	case "overflow":
		v.options(ptr, e, "options", optionRules{min: 1, max: maxOverflowOptions, url: true})
	case "checkboxes":
		opts := v.options(ptr, e, "options", optionRules{min: 1, max: maxChoiceOptions, mrkdwn: true})
		v.initialOptions(ptr, e, opts)
	case "radio_buttons":
		opts := v.options(ptr, e, "options", optionRules{min: 1, max: maxChoiceOptions, mrkdwn: true})
		v.initialOption(ptr, e, opts)
	case "datepicker":
		if d, ok := v.str(ptr, e, "initial_date"); ok {
			if _, err := time.Parse(time.DateOnly, d); err != nil || len(d) != len(time.DateOnly) {
				v.add(ptr+"/initial_date", "must be a valid date in the format YYYY-MM-DD")
			}
		}
	case "timepicker":
		if t, ok := v.str(ptr, e, "initial_time"); ok {
			if _, err := time.Parse("15:04", t); err != nil || len(t) != 5 {
				v.add(ptr+"/initial_time", "must be a valid time in the format HH:mm")
			}
		}
	case "datetimepicker":
		if n, ok := v.integer(ptr, e, "initial_date_time"); ok && n < 0 {
			v.add(ptr+"/initial_date_time", "must be a UNIX timestamp in seconds")
		}
	case "plain_text_input":
		v.plainTextInput(ptr, e)
	case "number_input":
		v.numberInput(ptr, e)
	case "image":
		v.imageElement(ptr, e)
	}
}

func (v *validator) button(ptr string, e obj) {
	v.requiredText(ptr, e, "text", true, maxButtonText)
	v.maxString(ptr, e, "value", maxButtonValue)
	v.maxString(ptr, e, "url", maxURL)
	v.style(ptr, e)
}

// style checks the optional style property of buttons and confirm dialogs.
func (v *validator) style(ptr string, o obj) {
	if s, ok := v.str(ptr, o, "style"); ok && s != "primary" && s != "danger" {
		v.add(ptr+"/style", `must be one of "primary", "danger"`)
	}
}

// confirm validates a confirmation dialog object.
func (v *validator) confirm(ptr string, x any) {
	c, ok := v.object(ptr, x)
	if !ok {
		return
	}
	v.requiredText(ptr, c, "title", true, maxConfirmTitle)
	v.requiredText(ptr, c, "text", false, maxConfirmText)
	v.requiredText(ptr, c, "confirm", true, maxConfirmButton)
	v.optionalText(ptr, c, "deny", true, maxConfirmButton)
	v.style(ptr, c)
}

func (v *validator) staticSelect(ptr string, e obj, multi bool) {
	_, hasOptions := e["options"]
	_, hasGroups := e["option_groups"]
	var opts map[string]string
	switch {
	case hasOptions && hasGroups:
		v.add(ptr, "must provide either options or option_groups, not both")
	case hasGroups:
		opts = v.optionGroups(ptr, e)
	case hasOptions:
		opts = v.options(ptr, e, "options", optionRules{min: 1, max: maxSelectOptions})
	default:
		v.add(ptr, "missing required field: options")
	}
	if multi {
		v.initialOptions(ptr, e, opts)
	} else {
		v.initialOption(ptr, e, opts)
	}
}

// optionRules are the constraints on an options array.
type optionRules struct {
	min, max int
	mrkdwn   bool // option text and description may be mrkdwn
	url      bool // options may carry a url (overflow menus)
}

// options validates the options array o[key] and returns its options as
// value → text. Values must be unique within one element.
func (v *validator) options(ptr string, o obj, key string, r optionRules) map[string]string {
	return v.optionsInto(ptr, o, key, r, map[string]string{})
}

func (v *validator) optionsInto(ptr string, o obj, key string, r optionRules, seen map[string]string) map[string]string {
	list, present := v.array(ptr, o, key, r.min, r.max)
	if !present {
		v.add(ptr, "missing required field: "+key)
	}
	for i, x := range list {
		p := fmt.Sprintf("%s/%s/%d", ptr, key, i)
		opt, ok := v.object(p, x)
		if !ok {
			continue
		}
		text := v.requiredText(p, opt, "text", !r.mrkdwn, maxOptionText)
		v.optionalText(p, opt, "description", !r.mrkdwn, maxOptionDesc)
		if val, ok := v.requiredString(p, opt, "value"); ok {
			if utf8.RuneCountInString(val) > maxOptionValue {
				v.tooLong(p+"/value", maxOptionValue)
			}
			if _, dup := seen[val]; dup {
				v.addf(p+"/value", "non-unique option value %q", val)
			}
			seen[val] = text
		}
		if _, ok := opt["url"]; ok && !r.url {
			v.add(p+"/url", "only allowed in overflow menus")
		}
		v.maxString(p, opt, "url", maxURL)
	}
	return seen
}

// optionGroups validates option_groups and returns all their options.
func (v *validator) optionGroups(ptr string, e obj) map[string]string {
	groups, _ := v.array(ptr, e, "option_groups", 1, maxSelectOptions)
	seen := map[string]string{}
	for i, x := range groups {
		p := fmt.Sprintf("%s/option_groups/%d", ptr, i)
		g, ok := v.object(p, x)
		if !ok {
			continue
		}
		v.requiredText(p, g, "label", true, maxOptionText)
		v.optionsInto(p, g, "options", optionRules{min: 1, max: maxSelectOptions}, seen)
	}
	return seen
}

// initialOption checks that initial_option is one of opts.
func (v *validator) initialOption(ptr string, e obj, opts map[string]string) {
	if x, ok := e["initial_option"]; ok {
		v.matchOption(ptr+"/initial_option", x, opts)
	}
}

// initialOptions checks that every initial_options item is one of opts.
func (v *validator) initialOptions(ptr string, e obj, opts map[string]string) {
	list, _ := v.array(ptr, e, "initial_options", 0, 0)
	for i, x := range list {
		v.matchOption(fmt.Sprintf("%s/initial_options/%d", ptr, i), x, opts)
	}
}

// matchOption reports x unless it has the value and text of an option.
func (v *validator) matchOption(ptr string, x any, opts map[string]string) {
	if opts == nil {
		return
	}
	o, ok := v.object(ptr, x)
	if !ok {
		return
	}
	val, _ := o["value"].(string)
	textObj, _ := o["text"].(obj)
	text, _ := textObj["text"].(string)
	if want, found := opts[val]; !found || want != text {
		v.add(ptr, "must exactly match one of the provided options")
	}
}

func (v *validator) plainTextInput(ptr string, e obj) {
	lo, hasLo := v.integer(ptr, e, "min_length")
	hi, hasHi := v.integer(ptr, e, "max_length")
	if hasLo && (lo < 0 || lo > maxTextInputLength) {
		v.addf(ptr+"/min_length", "must be between 0 and %d", maxTextInputLength)
	}
	if hasHi && (hi < 1 || hi > maxTextInputLength) {
		v.addf(ptr+"/max_length", "must be between 1 and %d", maxTextInputLength)
	}
	if hasLo && hasHi && lo > hi {
		v.add(ptr+"/min_length", "must be less than or equal to max_length")
	}
	v.maxString(ptr, e, "initial_value", maxTextInputLength)
	v.boolean(ptr, e, "multiline")
}

func (v *validator) numberInput(ptr string, e obj) {
	decimal, present := v.boolean(ptr, e, "is_decimal_allowed")
	if !present {
		v.add(ptr, "missing required field: is_decimal_allowed")
	}
	num := func(key string) (float64, bool) {
		x, ok := e[key]
		if !ok {
			return 0, false
		}
		var s string
		switch t := x.(type) {
		case string:
			s = t
		case json.Number:
			s = t.String()
		default:
			v.add(ptr+"/"+key, "must be a number")
			return 0, false
		}
		f, err := strconv.ParseFloat(s, 64)
		if err != nil {
			v.add(ptr+"/"+key, "must be a number")
			return 0, false
		}
		if !decimal && f != float64(int64(f)) {
			v.add(ptr+"/"+key, "must be an integer when is_decimal_allowed is false")
		}
		return f, true
	}
	lo, hasLo := num("min_value")
	hi, hasHi := num("max_value")
	init, hasInit := num("initial_value")
	if hasLo && hasHi && lo > hi {
		v.add(ptr+"/min_value", "must be less than or equal to max_value")
	}
	if hasInit && ((hasLo && init < lo) || (hasHi && init > hi)) {
		v.add(ptr+"/initial_value", "must be between min_value and max_value")
	}
}

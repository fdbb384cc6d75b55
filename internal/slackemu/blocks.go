package slackemu

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"unicode/utf8"
)

// Surface is where blocks are shown; limits and allowed blocks differ.
type Surface string

// Surfaces accepted by ValidateBlocks.
const (
	SurfaceMessage Surface = "message"
	SurfaceModal   Surface = "modal"
	SurfaceHome    Surface = "home"
)

// BlockError is one Block Kit validation error: what is wrong and where,
// as a JSON pointer into the request ("/blocks/3/elements/0/text/text" for
// messages, "/view/blocks/…" or "/view/title/text" for views).
type BlockError struct {
	Pointer string
	Message string
}

// Error formats e the way Slack does: "<message> [json-pointer:<pointer>]".
func (e BlockError) Error() string {
	return e.Message + " [json-pointer:" + e.Pointer + "]"
}

// Block Kit limits enforced by the validator (from Slack's reference).
const (
	maxMessageBlocks   = 50
	maxViewBlocks      = 100
	maxBlockID         = 255
	maxActionID        = 255
	maxHeaderText      = 150
	maxSectionText     = 3000
	maxSectionFields   = 10
	maxFieldText       = 2000
	maxContextElements = 10
	maxActionsElements = 25
	maxLabelText       = 2000
	maxImageURL        = 3000
	maxAltText         = 2000
	maxViewTitle       = 24
	maxPrivateMetadata = 3000
	maxCallbackID      = 255
	maxExternalID      = 255
)

// ValidateBlocks checks a JSON array of Block Kit blocks for the given
// surface and returns every problem found (nil if the blocks are valid).
// Pointers are rooted at "/blocks". It covers the rules the emulator's
// users are likely to break: block and element types, required fields,
// text lengths, item counts, unique block_id/action_id/option values, and
// initial values that must match an option or a format.
func ValidateBlocks(surface Surface, blocks json.RawMessage) []BlockError {
	list, err := decodeJSON(blocks)
	if err != nil {
		return []BlockError{{Pointer: "/blocks", Message: "must be valid JSON"}}
	}
	v := &validator{surface: surface, blockIDs: map[string]bool{}}
	v.blockList("/blocks", list)
	return v.errs
}

// ValidateView checks a modal or Home tab view object (as sent to
// views.open, views.update or views.publish). Pointers are rooted at
// "/view".
func ValidateView(view json.RawMessage) []BlockError {
	x, err := decodeJSON(view)
	if err != nil {
		return []BlockError{{Pointer: "/view", Message: "must be valid JSON"}}
	}
	v := &validator{blockIDs: map[string]bool{}}
	obj, ok := v.object("/view", x)
	if !ok {
		return v.errs
	}
	typ, _ := v.requiredString("/view", obj, "type")
	switch typ {
	case "modal":
		v.surface = SurfaceModal
	case "home":
		v.surface = SurfaceHome
	case "":
	default:
		v.add("/view/type", `must be one of "modal", "home"`)
	}
	if blocks, ok := obj["blocks"]; ok {
		v.blockList("/view/blocks", blocks)
	} else {
		v.add("/view", "missing required field: blocks")
	}
	if v.surface == SurfaceModal {
		v.requiredText("/view", obj, "title", true, maxViewTitle)
		v.optionalText("/view", obj, "close", true, maxViewTitle)
		v.optionalText("/view", obj, "submit", true, maxViewTitle)
		if _, ok := obj["submit"]; !ok && v.inputs > 0 {
			v.add("/view", "missing required field: submit (required when the view has input blocks)")
		}
	}
	v.maxString("/view", obj, "private_metadata", maxPrivateMetadata)
	v.maxString("/view", obj, "callback_id", maxCallbackID)
	v.maxString("/view", obj, "external_id", maxExternalID)
	return v.errs
}

// decodeJSON decodes raw into generic values, keeping numbers exact.
func decodeJSON(raw []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var x any
	if err := dec.Decode(&x); err != nil {
		return nil, err
	}
	if dec.More() {
		return nil, fmt.Errorf("trailing data")
	}
	return x, nil
}

// obj is a decoded JSON object.
type obj = map[string]any

// validator accumulates errors while walking a surface's blocks.
type validator struct {
	surface  Surface
	errs     []BlockError
	blockIDs map[string]bool // block_ids seen on the surface
	inputs   int             // input blocks seen
}

func (v *validator) add(ptr, msg string) {
	v.errs = append(v.errs, BlockError{Pointer: ptr, Message: msg})
}

func (v *validator) addf(ptr, format string, args ...any) {
	v.add(ptr, fmt.Sprintf(format, args...))
}

// tooLong is Slack's wording for a string over max characters.
func (v *validator) tooLong(ptr string, limit int) {
	v.addf(ptr, "must be less than %d characters", limit+1)
}

// object returns x as an object, or reports that it must be one.
func (v *validator) object(ptr string, x any) (obj, bool) {
	o, ok := x.(obj)
	if !ok {
		v.add(ptr, "must be an object")
	}
	return o, ok
}

// array returns o[key] as an array of minItems to maxItems items (maxItems
// 0: no limit).
// present is false when the key is absent.
func (v *validator) array(ptr string, o obj, key string, minItems, maxItems int) (list []any, present bool) {
	x, ok := o[key]
	if !ok {
		return nil, false
	}
	list, ok = x.([]any)
	if !ok {
		v.add(ptr+"/"+key, "must be an array")
		return nil, true
	}
	if len(list) < minItems {
		v.addf(ptr+"/"+key, "must provide at least %d item%s", minItems, plural(minItems))
	}
	if maxItems > 0 && len(list) > maxItems {
		v.addf(ptr+"/"+key, "no more than %d items allowed", maxItems)
	}
	return list, true
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// str returns o[key] if it is a string; it reports a wrong type.
func (v *validator) str(ptr string, o obj, key string) (string, bool) {
	x, ok := o[key]
	if !ok {
		return "", false
	}
	s, ok := x.(string)
	if !ok {
		v.add(ptr+"/"+key, "must be a string")
	}
	return s, ok
}

// requiredString returns o[key], reporting it when missing or empty.
func (v *validator) requiredString(ptr string, o obj, key string) (string, bool) {
	if _, ok := o[key]; !ok {
		v.add(ptr, "missing required field: "+key)
		return "", false
	}
	s, ok := v.str(ptr, o, key)
	if ok && s == "" {
		v.add(ptr+"/"+key, "must be more than 0 characters")
		return "", false
	}
	return s, ok
}

// maxString checks an optional string property's length.
func (v *validator) maxString(ptr string, o obj, key string, limit int) {
	if s, ok := v.str(ptr, o, key); ok && utf8.RuneCountInString(s) > limit {
		v.tooLong(ptr+"/"+key, limit)
	}
}

// boolean checks that an optional property is a boolean; present reports
// whether it was there.
func (v *validator) boolean(ptr string, o obj, key string) (val, present bool) {
	x, ok := o[key]
	if !ok {
		return false, false
	}
	b, ok := x.(bool)
	if !ok {
		v.add(ptr+"/"+key, "must be a boolean")
	}
	return b, true
}

// integer returns an optional integer property.
func (v *validator) integer(ptr string, o obj, key string) (int64, bool) {
	x, ok := o[key]
	if !ok {
		return 0, false
	}
	if n, isNum := x.(json.Number); isNum {
		if i, err := strconv.ParseInt(n.String(), 10, 64); err == nil {
			return i, true
		}
	}
	v.add(ptr+"/"+key, "must be an integer")
	return 0, false
}

// textObject validates a text object at ptr and returns its text.
// plainOnly restricts the type to plain_text; limit bounds the text length.
func (v *validator) textObject(ptr string, x any, plainOnly bool, limit int) string {
	o, ok := v.object(ptr, x)
	if !ok {
		return ""
	}
	typ, _ := v.requiredString(ptr, o, "type")
	switch {
	case typ == "":
	case plainOnly && typ != "plain_text":
		v.add(ptr+"/type", `must be "plain_text"`)
	case typ != "plain_text" && typ != "mrkdwn":
		v.add(ptr+"/type", `must be one of "plain_text", "mrkdwn"`)
	}
	text, ok := v.requiredString(ptr, o, "text")
	if ok && utf8.RuneCountInString(text) > limit {
		v.tooLong(ptr+"/text", limit)
	}
	if _, ok := o["emoji"]; ok && typ == "mrkdwn" {
		v.add(ptr+"/emoji", `only allowed for "plain_text"`)
	}
	return text
}

// requiredText validates the text object o[key], which must be present.
func (v *validator) requiredText(ptr string, o obj, key string, plainOnly bool, limit int) string {
	x, ok := o[key]
	if !ok {
		v.add(ptr, "missing required field: "+key)
		return ""
	}
	return v.textObject(ptr+"/"+key, x, plainOnly, limit)
}

// optionalText validates the text object o[key] if present.
func (v *validator) optionalText(ptr string, o obj, key string, plainOnly bool, limit int) string {
	x, ok := o[key]
	if !ok {
		return ""
	}
	return v.textObject(ptr+"/"+key, x, plainOnly, limit)
}

// blockList validates an array of blocks.
func (v *validator) blockList(ptr string, x any) {
	list, ok := x.([]any)
	if !ok {
		v.add(ptr, "must be an array")
		return
	}
	limit := maxViewBlocks
	if v.surface == SurfaceMessage {
		limit = maxMessageBlocks
	}
	if len(list) > limit {
		v.addf(ptr, "no more than %d items allowed", limit)
	}
	for i, b := range list {
		v.block(fmt.Sprintf("%s/%d", ptr, i), b)
	}
}

// block validates one block.
func (v *validator) block(ptr string, x any) {
	b, ok := v.object(ptr, x)
	if !ok {
		return
	}
	typ, _ := v.requiredString(ptr, b, "type")
	if id, ok := v.str(ptr, b, "block_id"); ok {
		switch {
		case id == "":
			v.add(ptr+"/block_id", "must be more than 0 characters")
		case utf8.RuneCountInString(id) > maxBlockID:
			v.tooLong(ptr+"/block_id", maxBlockID)
		case v.blockIDs[id]:
			v.addf(ptr+"/block_id", "non-unique block_id %q", id)
		}
		v.blockIDs[id] = true
	}
	switch typ {
	case "":
	case "header":
		v.requiredText(ptr, b, "text", true, maxHeaderText)
	case "section":
		v.section(ptr, b)
	case "context":
		v.context(ptr, b)
	case "divider":
	case "actions":
		v.actions(ptr, b)
	case "input":
		v.input(ptr, b)
	case "image":
		v.image(ptr, b)
	case "rich_text":
		v.richText(ptr, b)
	default:
		v.addf(ptr+"/type", "unsupported block type %q", typ)
	}
}

func (v *validator) section(ptr string, b obj) {
	_, hasText := b["text"]
	v.optionalText(ptr, b, "text", false, maxSectionText)
	fields, hasFields := v.array(ptr, b, "fields", 0, maxSectionFields)
	for i, f := range fields {
		v.textObject(fmt.Sprintf("%s/fields/%d", ptr, i), f, false, maxFieldText)
	}
	if !hasText && len(fields) == 0 {
		if hasFields {
			v.add(ptr+"/fields", "must provide at least 1 item")
		} else {
			v.add(ptr, "must provide either text or fields")
		}
	}
	if acc, ok := b["accessory"]; ok {
		v.element(ptr+"/accessory", acc, "section", map[string]bool{})
	}
	v.boolean(ptr, b, "expand")
}

func (v *validator) context(ptr string, b obj) {
	list, present := v.array(ptr, b, "elements", 1, maxContextElements)
	if !present {
		v.add(ptr, "missing required field: elements")
	}
	for i, x := range list {
		p := fmt.Sprintf("%s/elements/%d", ptr, i)
		o, ok := v.object(p, x)
		if !ok {
			continue
		}
		switch t, _ := o["type"].(string); t {
		case "image":
			v.imageElement(p, o)
		default:
			v.textObject(p, o, false, maxSectionText)
		}
	}
}

func (v *validator) actions(ptr string, b obj) {
	list, present := v.array(ptr, b, "elements", 1, maxActionsElements)
	if !present {
		v.add(ptr, "missing required field: elements")
	}
	actionIDs := map[string]bool{}
	for i, x := range list {
		v.element(fmt.Sprintf("%s/elements/%d", ptr, i), x, "actions", actionIDs)
	}
}

func (v *validator) input(ptr string, b obj) {
	v.inputs++
	if v.surface == SurfaceMessage {
		v.add(ptr+"/type", `"input" blocks are only allowed in modals and Home tabs`)
	}
	v.requiredText(ptr, b, "label", true, maxLabelText)
	v.optionalText(ptr, b, "hint", true, maxLabelText)
	if el, ok := b["element"]; ok {
		v.element(ptr+"/element", el, "input", map[string]bool{})
	} else {
		v.add(ptr, "missing required field: element")
	}
	v.boolean(ptr, b, "optional")
	v.boolean(ptr, b, "dispatch_action")
}

func (v *validator) image(ptr string, b obj) {
	v.imageElement(ptr, b)
	v.optionalText(ptr, b, "title", true, maxAltText)
}

// imageElement checks image_url (or slack_file) and alt_text, shared by
// image blocks and image elements.
func (v *validator) imageElement(ptr string, o obj) {
	if _, ok := o["slack_file"]; !ok {
		if u, ok := v.requiredString(ptr, o, "image_url"); ok && utf8.RuneCountInString(u) > maxImageURL {
			v.tooLong(ptr+"/image_url", maxImageURL)
		}
	}
	if alt, ok := v.requiredString(ptr, o, "alt_text"); ok && utf8.RuneCountInString(alt) > maxAltText {
		v.tooLong(ptr+"/alt_text", maxAltText)
	}
}

func (v *validator) richText(ptr string, b obj) {
	list, present := v.array(ptr, b, "elements", 0, 0)
	if !present {
		v.add(ptr, "missing required field: elements")
	}
	for i, x := range list {
		p := fmt.Sprintf("%s/elements/%d", ptr, i)
		o, ok := v.object(p, x)
		if !ok {
			continue
		}
		switch t, _ := v.requiredString(p, o, "type"); t {
		case "", "rich_text_section", "rich_text_list", "rich_text_preformatted", "rich_text_quote":
		default:
			v.addf(p+"/type", "unsupported rich text element type %q", t)
		}
	}
}

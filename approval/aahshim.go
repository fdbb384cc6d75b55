package approval

// TEMPORARY until aah14's review helpers land on main: the same names and
// behaviour as aah.Decision.Accepts, aah.Request.Accepts, aah.CheckParameters
// and aah.ChangedParameters. Deleted by the merge.

import (
	"maps"
	"reflect"
	"slices"

	"github.com/approvalbot/approvalbot/aah"
)

func decisionAccepts(d aah.Decision, v aah.Verb) bool {
	if d.Review == nil || d.Review.Responses == nil {
		return d.Type == aah.TypeApproval && (v == aah.VerbApprove || v == aah.VerbReject)
	}
	if v == aah.VerbModify && len(d.Review.Editable) == 0 {
		return false
	}
	return slices.Contains(d.Review.Responses, v)
}

func requestAccepts(r *aah.Request, v aah.Verb) bool {
	return slices.ContainsFunc(r.Data.Decisions, func(d aah.Decision) bool { return decisionAccepts(d, v) })
}

type paramError struct{ Param, Message string }

func (e *paramError) Error() string { return e.Param + ": " + e.Message }

func checkParameters(d aah.Decision, edited map[string]any) (map[string]any, error) {
	if d.Review == nil || d.Review.Action == nil || d.Review.Action.Parameters == nil {
		return nil, &paramError{Message: "this decision has no parameters to edit"}
	}
	full := maps.Clone(d.Review.Action.Parameters)
	for name, v := range edited {
		ok := slices.ContainsFunc(d.Review.Editable, func(e aah.EditableParam) bool { return e.Name == name })
		if !ok {
			return nil, &paramError{Param: name, Message: "is not editable"}
		}
		full[name] = v
	}
	return full, nil
}

type paramChange struct {
	Name     string
	From, To any
}

func changedParameters(orig, edited map[string]any) []paramChange {
	var out []paramChange
	for _, name := range slices.Sorted(maps.Keys(edited)) {
		if !reflect.DeepEqual(orig[name], edited[name]) {
			out = append(out, paramChange{name, orig[name], edited[name]})
		}
	}
	return out
}

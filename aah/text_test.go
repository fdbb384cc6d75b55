package aah_test

import (
	"errors"
	"reflect"
	"testing"

	"github.com/approvalbot/approvalbot/aah"
)

// CheckUnicode names the field of each string that is not well-formed
// Unicode, in the paths of the other intake errors, through nested objects
// and arrays, and accepts well-formed text (surrogate pairs, escaped
// backslashes that only look like escapes).
func TestCheckUnicodeNamesTheField(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		raw    string
		fields []string
	}{
		{`{"a":"ok","b":{"c":[1,"x",{"d":"` + "\xff" + `"}]}}`, []string{"b.c[2].d"}},
		{`{"a":[[],"` + "\xe2\x82" + `",{}, "` + `\udfff` + `"]}`, []string{"a[1]", "a[3]"}},
		{`{"a":{"k` + "\xc0" + `":1},"b":"\ud800\u0041"}`, []string{"a", "b"}},
		{`"` + "\xff" + `"`, []string{""}},
		{`{"a":"\ud83d\ude80 \\ud800 \\\ud83d\ude00 é","b":[{"c":"\u00e9"}]}`, nil},
	} {
		err := aah.CheckUnicode([]byte(tc.raw))
		var verr *aah.ValidationError
		var got []string
		if errors.As(err, &verr) {
			for _, p := range verr.Problems {
				got = append(got, p.Field)
			}
		} else if err != nil {
			t.Errorf("%q: %v", tc.raw, err)
		}
		if !reflect.DeepEqual(got, tc.fields) {
			t.Errorf("%q: problems at %q, want %q", tc.raw, got, tc.fields)
		}
	}
}

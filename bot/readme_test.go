package bot_test

import (
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/approvalbot/approvalbot/bot"
)

// Every setting in bot.Config has a row in the README's configuration table,
// so the documentation cannot fall behind the code.
func TestReadmeDocumentsEverySetting(t *testing.T) {
	t.Parallel()
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	typ := reflect.TypeFor[bot.Config]()
	for i := range typ.NumField() {
		name := typ.Field(i).Tag.Get("envconfig")
		if name == "" {
			continue
		}
		if !strings.Contains(string(readme), "\n| `"+name+"` |") {
			t.Errorf("README's configuration table has no row for %s", name)
		}
	}
}

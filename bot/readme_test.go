package bot_test

import (
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode"

	"github.com/approvalbot/approvalbot/bot"
)

// Every setting in bot.Config has a row in the configuration table
// (docs/configuration.md, linked from the README), so the documentation
// cannot fall behind the code.
func TestReadmeDocumentsEverySetting(t *testing.T) {
	t.Parallel()
	readme, err := os.ReadFile("../docs/configuration.md")
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
			t.Errorf("docs/configuration.md has no row for %s", name)
		}
	}
}

// Every relative link in the README and docs/ reaches a file, and every
// #anchor a heading of the page it names, so moving a section cannot leave
// a dead link behind.
func TestDocsLinksResolve(t *testing.T) {
	t.Parallel()
	pages, err := filepath.Glob("../docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	pages = append(pages, "../README.md")
	link := regexp.MustCompile(`\]\(([^)\s]+)\)`)
	for _, page := range pages {
		text, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range link.FindAllStringSubmatch(string(text), -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			file, anchor, _ := strings.Cut(target, "#")
			path := page
			if file != "" {
				path = filepath.Join(filepath.Dir(page), file)
			}
			if _, err := os.Stat(path); err != nil {
				t.Errorf("%s links to %s: no such file", page, target)
				continue
			}
			if anchor != "" && !slices.Contains(headingSlugs(t, path), anchor) {
				t.Errorf("%s links to %s: no such heading", page, target)
			}
		}
	}
}

// headingSlugs are the anchors GitHub gives a Markdown page's headings.
func headingSlugs(t *testing.T, path string) []string {
	t.Helper()
	text, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var slugs []string
	inCode := false
	for line := range strings.SplitSeq(string(text), "\n") {
		if strings.HasPrefix(line, "```") {
			inCode = !inCode
		}
		heading, ok := strings.CutPrefix(strings.TrimLeft(line, "#"), " ")
		if inCode || !strings.HasPrefix(line, "#") || !ok {
			continue
		}
		slug := strings.Map(func(r rune) rune {
			switch {
			case r == ' ':
				return '-'
			case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
				return unicode.ToLower(r)
			}
			return -1
		}, strings.TrimSpace(heading))
		slugs = append(slugs, slug)
	}
	return slugs
}

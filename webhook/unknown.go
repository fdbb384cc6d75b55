package webhook

import (
	"net/http"
	"slices"
	"strings"
)

// CatchAllPattern is the mux pattern of unknown (the API's catch-all): a
// request it answers matched no endpoint (metrics count it "unmatched").
const CatchAllPattern = "/v1/"

// routeTable registers routes and remembers their patterns, so that the
// catch-all of /v1 can tell a method the path does not take (405, with
// Allow) from a path that is no endpoint (404), each answered as every API
// error is (ServeMux would answer them in plain text).
type routeTable struct {
	router
	patterns []string
}

func (t *routeTable) HandleFunc(pattern string, handler func(http.ResponseWriter, *http.Request)) {
	t.patterns = append(t.patterns, pattern)
	t.router.HandleFunc(pattern, handler)
}

// unknown answers a /v1 request no route took.
func (t *routeTable) unknown(w http.ResponseWriter, r *http.Request) {
	var allow []string
	for _, p := range t.patterns {
		method, path, _ := strings.Cut(p, " ")
		if samePath(path, r.URL.Path) && !slices.Contains(allow, method) {
			allow = append(allow, method)
			if method == http.MethodGet {
				allow = append(allow, http.MethodHead)
			}
		}
	}
	if len(allow) == 0 {
		writeError(w, r, http.StatusNotFound, "no endpoint "+quote(r.URL.Path)+": GET /openapi.json lists them")
		return
	}
	slices.Sort(allow)
	w.Header().Set("Allow", strings.Join(allow, ", "))
	writeError(w, r, http.StatusMethodNotAllowed, r.Method+" is not an operation of "+quote(r.URL.Path)+"; it takes "+strings.Join(allow, ", "))
}

// samePath reports whether path matches a route's path pattern, whose
// {wildcards} match one segment.
func samePath(pattern, path string) bool {
	ps, segs := strings.Split(pattern, "/"), strings.Split(path, "/")
	if len(ps) != len(segs) {
		return false
	}
	for i, p := range ps {
		if !strings.HasPrefix(p, "{") && p != segs[i] {
			return false
		}
		if strings.HasPrefix(p, "{") && segs[i] == "" {
			return false
		}
	}
	return true
}

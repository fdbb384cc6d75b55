package sandbox

import (
	"embed"
	"io/fs"
	"net/http"
)

// assets are the page's files: plain HTML, CSS and JavaScript, no build
// step and nothing fetched from elsewhere, so the sandbox works offline.
//
//go:embed assets
var assets embed.FS

// assetHandler serves one file of assets.
func assetHandler(name string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-cache")
		http.ServeFileFS(w, r, assets, "assets/"+name)
	})
}

// staticHandler serves assets under /static/.
func staticHandler() http.Handler {
	sub, err := fs.Sub(assets, "assets")
	if err != nil {
		panic(err) // "assets" is embedded above: it exists
	}
	fs := http.StripPrefix("/static/", http.FileServerFS(sub))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-cache")
		fs.ServeHTTP(w, r)
	})
}

package webhook

import (
	"bytes"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"net/http"
	"time"

	"github.com/approvalbot/approvalbot/aah/schema"
)

// OpenAPIJSON is the OpenAPI 3.1 description of the API (openapi.json),
// served at GET /openapi.json. It references the artifact schemas by the
// relative URLs schemas/decision-request.schema.json and
// schemas/decision-response.schema.json, served beside it.
//
//go:embed openapi.json
var OpenAPIJSON []byte

// document is a static JSON document the API serves, with its validator.
type document struct {
	body        []byte
	contentType string
	etag        string
}

func newDocument(body []byte, contentType string) document {
	sum := sha256.Sum256(body)
	return document{body: body, contentType: contentType, etag: `"` + hex.EncodeToString(sum[:16]) + `"`}
}

// serve answers GET (and HEAD) of the document: cacheable for five
// minutes, then revalidated by its ETag (304 when it did not change).
func (d document) serve(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Type", d.contentType)
	h.Set("ETag", d.etag)
	h.Set("Cache-Control", "public, max-age=300")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Access-Control-Allow-Origin", "*") // API explorers on other origins may read it
	http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(d.body))
}

var (
	openAPIDoc = newDocument(OpenAPIJSON, "application/json")
	schemaDocs = map[string]document{
		"decision-request.schema.json":  newDocument(schema.RequestSchemaJSON, "application/schema+json"),
		"decision-response.schema.json": newDocument(schema.ResponseSchemaJSON, "application/schema+json"),
	}
)

// serveSchema is GET /schemas/{name}: the artifacts' JSON Schemas (draft
// 2020-12) the OpenAPI document references.
func serveSchema(w http.ResponseWriter, r *http.Request) {
	d, ok := schemaDocs[r.PathValue("name")]
	if !ok {
		writeError(w, r, http.StatusNotFound, "no schema named "+quote(r.PathValue("name"))+
			": there are decision-request.schema.json and decision-response.schema.json")
		return
	}
	d.serve(w, r)
}

// router is where the API's routes are registered: an *http.ServeMux, or
// in tests a recorder of the patterns.
type router interface {
	HandleFunc(pattern string, handler func(http.ResponseWriter, *http.Request))
}

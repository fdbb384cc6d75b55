package mcpserver

import (
	"io"
	"net/http"
	"sync"
)

// loopback is an http.RoundTripper that serves each request with a handler
// in this process, streaming its answer: the /mcp endpoint's tools reach the
// bot's own /v1 through it, so every rule of /v1 (authentication, limits,
// validation, long polls, event streams) applies unchanged, with no socket
// and no address to know.
type loopback struct {
	h http.Handler
	// requestID, when set, is sent as X-Request-Id: the /mcp request's, so
	// the access log lines of its inner /v1 calls carry its id.
	requestID string
}

func (t loopback) RoundTrip(req *http.Request) (*http.Response, error) {
	r := req.Clone(req.Context())
	if t.requestID != "" {
		r.Header.Set(requestIDHeader, t.requestID)
	}
	r.RequestURI = req.URL.RequestURI()
	r.RemoteAddr = "127.0.0.1:0"
	if r.Body == nil {
		r.Body = http.NoBody
	}
	pr, pw := io.Pipe()
	w := &pipeWriter{header: http.Header{}, pw: pw, ready: make(chan struct{})}
	go func() {
		defer func() {
			w.WriteHeader(http.StatusOK) // a handler that wrote nothing answered 200
			_ = pw.Close()
		}()
		t.h.ServeHTTP(w, r)
	}()
	select {
	case <-w.ready:
	case <-req.Context().Done():
		_ = pr.CloseWithError(req.Context().Err())
		return nil, req.Context().Err()
	}
	return &http.Response{Status: http.StatusText(w.status), StatusCode: w.status, Proto: "HTTP/1.1",
		ProtoMajor: 1, ProtoMinor: 1, Header: w.sent, Body: pr, ContentLength: -1, Request: req}, nil
}

// requestIDHeader is the bot's request id header (bot.RequestIDHeader).
const requestIDHeader = "X-Request-Id"

// pipeWriter is the handler's side: the header is sent when it is written,
// the body through the pipe as the handler writes it (a write blocks until
// the client reads it, so Flush has nothing to do).
type pipeWriter struct {
	header http.Header
	sent   http.Header
	pw     *io.PipeWriter
	once   sync.Once
	status int
	ready  chan struct{}
}

func (w *pipeWriter) Header() http.Header { return w.header }

func (w *pipeWriter) WriteHeader(status int) {
	w.once.Do(func() {
		w.status, w.sent = status, w.header.Clone()
		close(w.ready)
	})
}

func (w *pipeWriter) Write(b []byte) (int, error) {
	w.WriteHeader(http.StatusOK)
	return w.pw.Write(b)
}

func (w *pipeWriter) Flush() {}

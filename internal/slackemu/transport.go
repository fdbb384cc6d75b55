package slackemu

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"strconv"
)

// EmulatorAPIURL is the base URL returned by Server.APIURL. Its host is never
// resolved: the client from Server.Client answers every request in-process.
const EmulatorAPIURL = "http://slack.emulator.local/api/"

// APIURL returns the base URL to give slack-go together with Client:
//
//	slack.New(s.Token(), slack.OptionAPIURL(s.APIURL()), slack.OptionHTTPClient(s.Client()))
//
// When the server is mounted on a real listener (httptest.NewServer(s)),
// use that listener's URL + "/api/" with any HTTP client instead.
func (s *Server) APIURL() string { return EmulatorAPIURL }

// Client returns an HTTP client whose transport hands every request
// directly to the server's ServeHTTP, whatever the URL's host: no network
// and no listener are involved.
func (s *Server) Client() *http.Client {
	return &http.Client{Transport: inProcess{h: s}}
}

// inProcess is an http.RoundTripper that serves requests with a handler.
type inProcess struct {
	h http.Handler
}

// RoundTrip implements http.RoundTripper.
func (t inProcess) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Body != nil {
		defer req.Body.Close()
	}
	if err := req.Context().Err(); err != nil {
		return nil, err
	}
	// The handler may read (and replace) Body; give it a shallow copy so
	// the caller's request is not modified, as RoundTrippers must not.
	r := req.Clone(req.Context())
	if r.Body == nil {
		r.Body = http.NoBody
	}
	if r.RequestURI == "" {
		r.RequestURI = r.URL.RequestURI()
	}
	w := &recorder{header: http.Header{}}
	if dropped := serveCatchingAbort(t.h, w, r); dropped {
		return nil, ErrConnectionDropped
	}
	if w.status == 0 {
		w.status = http.StatusOK
	}
	w.header.Set("Content-Length", strconv.Itoa(w.body.Len()))
	return &http.Response{
		Status:        fmt.Sprintf("%d %s", w.status, http.StatusText(w.status)),
		StatusCode:    w.status,
		Proto:         "HTTP/1.1",
		ProtoMajor:    1,
		ProtoMinor:    1,
		Header:        w.header,
		Body:          io.NopCloser(bytes.NewReader(w.body.Bytes())),
		ContentLength: int64(w.body.Len()),
		Request:       req,
	}, nil
}

// recorder is a minimal http.ResponseWriter that buffers the response.
type recorder struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (w *recorder) Header() http.Header { return w.header }

func (w *recorder) WriteHeader(status int) {
	if w.status == 0 {
		w.status = status
	}
}

func (w *recorder) Write(p []byte) (int, error) {
	if w.status == 0 {
		w.WriteHeader(http.StatusOK)
	}
	return w.body.Write(p)
}

// serveCatchingAbort runs h, reporting whether it aborted its response with
// http.ErrAbortHandler (a dropped connection, InjectFailAfterEffect).
func serveCatchingAbort(h http.Handler, w http.ResponseWriter, r *http.Request) (dropped bool) {
	defer func() {
		if v := recover(); v != nil {
			if v != http.ErrAbortHandler {
				panic(v)
			}
			dropped = true
		}
	}()
	h.ServeHTTP(w, r)
	return false
}

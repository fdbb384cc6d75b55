package slackemu

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/slack-go/slack"
)

// newHTTP starts s on an httptest listener and returns a slack-go client
// talking to it.
func newHTTP(t *testing.T, s *Server) *slack.Client {
	t.Helper()
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	return slack.New(s.Token(), slack.OptionAPIURL(srv.URL+"/api/"))
}

// newInProc returns a slack-go client using the in-process transport.
func newInProc(s *Server) *slack.Client {
	return slack.New(s.Token(), slack.OptionAPIURL(s.APIURL()), slack.OptionHTTPClient(s.Client()))
}

// transports lists both ways of connecting a client, for table tests.
var transports = []struct {
	name   string
	client func(t *testing.T, s *Server) *slack.Client
}{
	{"httptest", newHTTP},
	{"in-process", func(_ *testing.T, s *Server) *slack.Client { return newInProc(s) }},
}

// slackErr asserts that err is a slack.SlackErrorResponse with code.
func slackErr(t *testing.T, err error, code string) slack.SlackErrorResponse {
	t.Helper()
	var se slack.SlackErrorResponse
	if !errors.As(err, &se) {
		t.Fatalf("error = %v (%T), want SlackErrorResponse %q", err, err, code)
	}
	if se.Err != code {
		t.Fatalf("error = %q, want %q", se.Err, code)
	}
	return se
}

// ctx returns a context that ends with the test or after a minute (a guard
// against a hung test, not a measure of speed).
func ctx(t *testing.T) context.Context {
	t.Helper()
	c, cancel := context.WithTimeout(t.Context(), time.Minute)
	t.Cleanup(cancel)
	return c
}

// raw sends a request to s in-process and returns status, headers and body.
func raw(t *testing.T, s *Server, method, path, contentType, body string, header http.Header) (int, http.Header, string) {
	t.Helper()
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, "http://slack.emulator.local"+path, r)
	if err != nil {
		t.Fatal(err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	for k, v := range header {
		req.Header[k] = v
	}
	resp, err := s.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, resp.Header, string(b)
}

// postForm sends a form POST of method with the default token.
func postForm(t *testing.T, s *Server, method string, values url.Values) (int, string) {
	t.Helper()
	values.Set("token", s.Token())
	status, _, body := raw(t, s, http.MethodPost, "/api/"+method, "application/x-www-form-urlencoded", values.Encode(), nil)
	return status, body
}

// fakeClock is a manually advanced clock for Options.Now.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func newFakeClock() *fakeClock {
	return &fakeClock{now: time.Unix(1700000000, 0)}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

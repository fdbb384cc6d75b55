package webhook_test

import (
	"context"
	"encoding/binary"
	"errors"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/approvalbot/approvalbot/store"
	"github.com/approvalbot/approvalbot/webhook"
)

// Without CALLBACK_ALLOW_PRIVATE, every target that is (or resolves only to)
// a loopback, private, link-local, IPv4-mapped, unspecified or multicast
// address is refused before any packet leaves: the loopback test server sees
// nothing, and 10.x / 169.254.x are never contacted. Such a target can never
// be allowed, so the delivery fails at once, visibly (dead, with the reason),
// instead of being retried for a day.
func TestDeliveryRefusesPrivateTargets(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	rc := newTLSReceiver(t)
	_, port, _ := net.SplitHostPort(rc.srv.Listener.Addr().String())
	dns := fakeDNS(t, net.IPv4(127, 0, 0, 1))
	d, reg := e.deliverer(func(o *webhook.DelivererOptions) {
		o.AllowPrivate = false
		o.Resolver = dns
		o.Timeout = 30 * time.Second // a guard: refusals never wait on it
	})
	cases := []struct {
		name, url, want string
	}{
		{"loopback", "https://127.0.0.1:" + port + "/hook", "private address"},
		{"loopback v6", "https://[::1]:" + port + "/hook", "private address"},
		{"rfc1918", "https://10.0.0.1/hook", "private address"},
		{"metadata", "https://169.254.169.254/latest/meta-data", "private address"},
		{"ipv4-mapped v6", "https://[::ffff:127.0.0.1]:" + port + "/hook", "private address"},
		{"ula", "https://[fd00::1]/hook", "private address"},
		{"unspecified", "https://0.0.0.0:" + port + "/hook", "private address"},
		{"multicast", "https://224.0.0.1/hook", "private address"},
		{"localhost name", "https://localhost:" + port + "/hook", "private address"},
		{"name resolving to loopback", "https://rebind.example.test:" + port + "/hook", "private address"},
		{"plain http", "http://example.com/hook", "scheme http is not allowed"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			id := "ssrf-" + strings.ReplaceAll(c.name, " ", "-")
			e.create(id, c.url)
			e.resolve(id, responseFor(id), "msg_"+id)
			mustNil(t, d.Handle(t.Context(), deliverJob(id)))
			rec, err := e.st.Get(t.Context(), id)
			mustNil(t, err)
			errText := rec.Delivery.LastError
			t.Logf("%s: %s", c.url, errText)
			if strings.Contains(errText, "address family not supported") && strings.Contains(c.url, "[") {
				t.Skipf("no IPv6 here: %s", errText) // no socket, so no connection either
			}
			if !strings.Contains(errText, "refused: "+c.want) {
				t.Errorf("%s: recorded error %q, want a refusal (%q)", c.url, errText, c.want)
			}
			if !strings.Contains(errText, "not retried") {
				t.Errorf("%s: %q does not say the refusal is final", c.url, errText)
			}
			if rec.Delivery.State != store.DeliveryDead || rec.Delivery.Attempts != 1 || !rec.Delivery.NextAttemptAt.IsZero() {
				t.Errorf("%s: delivery = %+v, want dead after one refused attempt, no retry", c.url, rec.Delivery)
			}
			attempts, err := e.st.Deliveries(t.Context(), id)
			mustNil(t, err)
			if len(attempts) != 1 || attempts[0].Status != 0 || attempts[0].Error != errText {
				t.Errorf("%s: attempts = %+v", c.url, attempts)
			}
		})
	}
	if n := len(rc.got()); n != 0 {
		t.Errorf("the loopback server received %d requests", n)
	}
	if v := metricValue(t, reg, "approvalbot_callback_deliveries_total", map[string]string{"outcome": "refused"}); v < float64(len(cases)-2) {
		t.Errorf("deliveries_total{refused} = %v", v)
	}
}

// A name that cannot be resolved now may resolve later (a DNS outage, a
// record not yet published): the attempt fails and is retried.
func TestDeliveryRetriesWhenDNSFails(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	noDNS := &net.Resolver{PreferGo: true, Dial: func(context.Context, string, string) (net.Conn, error) {
		return nil, errors.New("no DNS server reachable")
	}}
	d, _ := e.deliverer(func(o *webhook.DelivererOptions) { o.AllowPrivate = false; o.Resolver = noDNS })
	e.create("dns-down", "https://agent.example.test/hook")
	e.resolve("dns-down", responseFor("dns-down"), "msg_dns-down")
	mustNil(t, d.Handle(t.Context(), deliverJob("dns-down")))
	rec, err := e.st.Get(t.Context(), "dns-down")
	mustNil(t, err)
	if rec.Delivery.State != store.DeliveryRetrying || rec.Delivery.NextAttemptAt.IsZero() {
		t.Errorf("delivery = %+v, want a failed attempt retried later", rec.Delivery)
	}
	if strings.Contains(rec.Delivery.LastError, "not retried") {
		t.Errorf("a DNS failure was taken for a final refusal: %q", rec.Delivery.LastError)
	}
}

// A name that resolved to a public address when checked but to a private
// one at dial time (DNS rebinding) is still refused by the dial guard,
// before any packet is sent; since the name may resolve differently again,
// that refusal is retried, not final.
func TestDeliveryRefusesANameThatRebindsAtDialTime(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	rc := newTLSReceiver(t)
	_, port, _ := net.SplitHostPort(rc.srv.Listener.Addr().String())
	var lookups atomic.Int32
	dns := fakeDNSFunc(t, func() net.IP {
		if lookups.Add(1) == 1 {
			return net.IPv4(93, 184, 215, 14) // public: the check lets it through
		}
		return net.IPv4(127, 0, 0, 1)
	})
	d, _ := e.deliverer(func(o *webhook.DelivererOptions) { o.AllowPrivate = false; o.Resolver = dns })
	e.create("rebinds", "https://rebinds.example.test:"+port+"/hook")
	e.resolve("rebinds", responseFor("rebinds"), "msg_rebinds")
	mustNil(t, d.Handle(t.Context(), deliverJob("rebinds")))
	rec, err := e.st.Get(t.Context(), "rebinds")
	mustNil(t, err)
	if !strings.HasPrefix(rec.Delivery.LastError, "dial 127.0.0.1:") || !strings.Contains(rec.Delivery.LastError, "refused: private address") {
		t.Errorf("recorded error %q, want the dial guard's refusal of 127.0.0.1", rec.Delivery.LastError)
	}
	if rec.Delivery.State != store.DeliveryRetrying || rec.Delivery.NextAttemptAt.IsZero() {
		t.Errorf("delivery = %+v, want a refused attempt retried later", rec.Delivery)
	}
	if n := len(rc.got()); n != 0 {
		t.Errorf("the loopback server received %d requests", n)
	}
}

// CALLBACK_ALLOW_PRIVATE (development) permits plain http to loopback (by
// address or by name), but still not link-local (cloud metadata).
func TestAllowPrivatePermitsLoopbackHTTP(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	rc := newReceiver(t, nil)
	_, port, _ := net.SplitHostPort(rc.srv.Listener.Addr().String())
	d, _ := e.deliverer(func(o *webhook.DelivererOptions) { o.AllowPrivate = true; o.Timeout = 30 * time.Second })
	for _, target := range []string{"http://127.0.0.1:" + port + "/a", "http://localhost:" + port + "/b"} {
		id := "dev-" + target[len(target)-1:]
		e.create(id, target)
		e.resolve(id, responseFor(id), "msg_"+id)
		mustNil(t, d.Handle(t.Context(), deliverJob(id)))
		rec, err := e.st.Get(t.Context(), id)
		mustNil(t, err)
		if rec.Delivery.State != store.DeliveryDelivered {
			t.Errorf("%s: delivery = %+v, want delivered", target, rec.Delivery)
		}
	}
	if n := len(rc.got()); n != 2 {
		t.Errorf("receiver got %d requests, want 2", n)
	}
	e.create("dev-metadata", "http://169.254.169.254/latest/meta-data")
	e.resolve("dev-metadata", responseFor("dev-metadata"), "msg_dev-metadata")
	mustNil(t, d.Handle(t.Context(), deliverJob("dev-metadata")))
	rec, err := e.st.Get(t.Context(), "dev-metadata")
	mustNil(t, err)
	if !strings.Contains(rec.Delivery.LastError, "refused: private address") {
		t.Errorf("metadata address with AllowPrivate: %q, want refused", rec.Delivery.LastError)
	}
}

// fakeDNS answers every A query with ip and every other query with no
// records: a name an attacker points at an internal address. The returned
// resolver asks only it.
func fakeDNS(t *testing.T, ip net.IP) *net.Resolver {
	t.Helper()
	return fakeDNSFunc(t, func() net.IP { return ip })
}

// fakeDNSFunc is fakeDNS answering each A query with next(): a name that
// rebinds between lookups.
func fakeDNSFunc(t *testing.T, next func() net.IP) *net.Resolver {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	mustNil(t, err)
	t.Cleanup(func() { _ = pc.Close() })
	go func() {
		buf := make([]byte, 1500)
		for {
			n, from, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			if reply := dnsReply(buf[:n], next); reply != nil {
				_, _ = pc.WriteTo(reply, from)
			}
		}
	}()
	addr := pc.LocalAddr().String()
	return &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "udp", addr)
	}}
}

// dnsReply answers a one-question query (RFC 1035 wire format).
func dnsReply(q []byte, next func() net.IP) []byte {
	if len(q) < 12 || binary.BigEndian.Uint16(q[4:6]) != 1 {
		return nil
	}
	i := 12
	for i < len(q) && q[i] != 0 {
		i += int(q[i]) + 1
	}
	if i+5 > len(q) {
		return nil
	}
	question := q[12 : i+5]
	qtype := binary.BigEndian.Uint16(q[i+1 : i+3])
	out := append([]byte{}, q[0:2]...)        // id
	out = append(out, 0x81, 0x80)             // response, recursion desired and available, NOERROR
	out = append(out, 0, 1, 0, 0, 0, 0, 0, 0) // 1 question; answers set below
	out = append(out, question...)
	if qtype == 1 { // A
		out[7] = 1
		out = append(out, 0xc0, 0x0c, 0, 1, 0, 1, 0, 0, 0, 0, 0, 4)
		out = append(out, next().To4()...)
	}
	return out
}

package webhook

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"syscall"
	"time"

	"code.dny.dev/ssrf"
)

// The callback's SSRF defence: the guard that decides which addresses a
// delivery may connect to, the transport that applies it to every dial, and
// the check that fails a delivery at once when its target can never pass.

// refusedError is the dial guard's refusal of a resolved address.
type refusedError struct {
	addr   string // ip:port the connection would have gone to
	reason string
}

func (e *refusedError) Error() string { return "dial " + e.addr + ": refused: " + e.reason }

// Private ranges CALLBACK_ALLOW_PRIVATE opens: loopback, RFC 1918, CGNAT and
// ULA. Everything else the guard denies (link-local and so cloud metadata,
// multicast, unspecified, documentation ranges...) stays denied.
var (
	devAllowedV4 = []netip.Prefix{
		netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("10.0.0.0/8"),
		netip.MustParsePrefix("172.16.0.0/12"), netip.MustParsePrefix("192.168.0.0/16"),
		netip.MustParsePrefix("100.64.0.0/10"),
	}
	devAllowedV6 = []netip.Prefix{netip.MustParsePrefix("::1/128"), netip.MustParsePrefix("fc00::/7")}
)

// newGuard is the address check of every callback connection.
func newGuard(allowPrivate bool) *ssrf.Guardian {
	opts := []ssrf.Option{ssrf.WithAnyPort()} // agents listen where they like; addresses are what matter
	if allowPrivate {
		opts = append(opts, ssrf.WithAllowedV4Prefixes(devAllowedV4...), ssrf.WithAllowedV6Prefixes(devAllowedV6...))
	}
	return ssrf.New(opts...)
}

// safeTransport is the callback transport: no proxy (a proxy would dial for
// us, past the guard), and a dialer whose Control checks every address it is
// about to connect to, after DNS resolution, so a name that resolves (or
// rebinds) to a loopback, private, link-local, IPv4-mapped, unspecified or
// multicast address is refused before any packet is sent to it.
func safeTransport(guard *ssrf.Guardian, timeout time.Duration, resolver *net.Resolver) *http.Transport {
	dialer := &net.Dialer{
		Timeout:   timeout,
		KeepAlive: 30 * time.Second,
		Resolver:  resolver,
		Control: func(network, address string, c syscall.RawConn) error {
			if err := guard.Safe(network, address, c); err != nil {
				reason := "not a permitted destination"
				switch {
				case errors.Is(err, ssrf.ErrProhibitedIP):
					reason = "private address"
					if ap, perr := netip.ParseAddrPort(address); perr == nil {
						reason += " (" + addressKind(ap.Addr()) + ")"
					}
				case errors.Is(err, ssrf.ErrProhibitedNetwork):
					reason = "network " + network + " not allowed"
				}
				return &refusedError{addr: address, reason: reason}
			}
			return nil
		},
	}
	return &http.Transport{
		Proxy:                  nil,
		DialContext:            dialer.DialContext,
		ForceAttemptHTTP2:      true,
		TLSHandshakeTimeout:    timeout,
		ResponseHeaderTimeout:  timeout,
		MaxResponseHeaderBytes: 64 << 10,
		MaxIdleConns:           100,
		MaxIdleConnsPerHost:    4,
		IdleConnTimeout:        90 * time.Second,
	}
}

// finalRefusal says why a delivery to response_url can never be made, or ""
// when it may: a URL checkURL refuses, a host that is an IP literal the
// guard denies, or a host name every address of which the guard denies.
// Such a delivery fails at once (dead, with this reason) rather than being
// retried for a day: nothing a retry waits for would change it (opening
// CALLBACK_ALLOW_PRIVATE takes a restart; POST .../redeliver then starts
// the delivery again). A name that does not resolve now is not refused:
// DNS may answer later, so the attempt goes ahead and fails like any network
// error, and is retried. Nor is a name with some permitted address: the
// dial guard still refuses the others, and a name that rebinds, as a
// refusal that is retried.
func (d *Deliverer) finalRefusal(ctx context.Context, raw string) string {
	const final = "; never permitted, not retried"
	if reason := d.checkURL(raw); reason != "" {
		return reason + final
	}
	if d.guard == nil {
		return "" // a test transport: no guard to ask
	}
	u, err := url.Parse(raw)
	if err != nil {
		return "refused: invalid response_url" + final
	}
	host := u.Hostname()
	if ip, err := netip.ParseAddr(host); err == nil {
		if d.guard.SafeAddr(ip) != nil {
			return fmt.Sprintf("refused: private address %s (%s)%s", ip, addressKind(ip), final)
		}
		return ""
	}
	lctx, cancel := context.WithTimeout(ctx, d.timeout)
	defer cancel()
	addrs, err := d.resolver.LookupNetIP(lctx, "ip", host)
	if err != nil || len(addrs) == 0 {
		return "" // the dial looks it up again and reports the failure
	}
	kinds := make([]string, len(addrs))
	for i, a := range addrs {
		// The resolver may hand IPv4 answers back IPv4-mapped; the dialer
		// connects to (and the guard judges) the plain IPv4 address.
		a = a.Unmap()
		if d.guard.SafeAddr(a) == nil {
			return ""
		}
		kinds[i] = a.String() + " (" + addressKind(a) + ")"
	}
	return fmt.Sprintf("refused: private address: %s resolves only to %s%s", host, strings.Join(kinds, ", "), final)
}

// addressKind names why an address is not public, for the attempt log.
func addressKind(a netip.Addr) string {
	mapped := a.Is4In6()
	a = a.Unmap()
	kind := "reserved"
	switch {
	case a.IsLoopback():
		kind = "loopback"
	case a.IsPrivate():
		kind = "private network"
	case a.IsLinkLocalUnicast():
		kind = "link-local"
	case a.IsMulticast():
		kind = "multicast"
	case a.IsUnspecified():
		kind = "unspecified"
	}
	if mapped {
		kind += ", IPv4-mapped IPv6"
	}
	return kind
}

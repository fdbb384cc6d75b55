package bot

import (
	"net"
	"net/http"
	"strings"
)

// localGuard keeps web pages away from a bot in local mode. There, anyone
// who can send it a request can act as any member: the sandbox's page API
// signs Slack requests for whichever member it is told, /slack/* takes
// requests signed with the public local signing secret, and /v1 takes
// requests without a token (unless INTAKE_TOKENS is set). The listener is
// on loopback by default (LoadConfig), which keeps other machines out; this
// keeps out the pages a developer's browser opens:
//
//   - A request that reached a loopback address with a Host that is not a
//     loopback name is refused (403): a page on another origin that had
//     its name rebound to 127.0.0.1 (DNS rebinding) sends its own name.
//     (/mcp applies the same rule, without INTAKE_TOKENS.) A proxy in
//     front of a local bot must pass a loopback Host.
//   - A cross-site request that is not a navigation (an image, a script, a
//     fetch from another site's page: Sec-Fetch-Site) is refused, whatever
//     its method; following a link to the sandbox is not.
//   - A cross-origin POST, PUT, PATCH or DELETE from a browser is refused
//     (403, net/http's CrossOriginProtection: Sec-Fetch-Site, else Origin
//     against Host), such as a form or a text/plain fetch, which a browser
//     sends without asking first. Requests without those headers (curl,
//     agents, the bot's own calls to the emulator and the sandbox's inbox)
//     are not browsers' and pass.
func localGuard(next http.Handler) http.Handler {
	cop := http.NewCrossOriginProtection()
	cop.SetDenyHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "forbidden: a cross-origin request from a web page; in local mode approvalbot "+
			"answers only its own pages and clients that are not browsers", http.StatusForbidden)
	}))
	guarded := cop.Handler(next)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if local, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr); ok && IsLoopbackHost(local.String()) &&
			r.Host != "" && !IsLoopbackHost(r.Host) {
			http.Error(w, "forbidden: Host "+r.Host+" is not a loopback name; in local mode approvalbot answers "+
				"only http://localhost (or 127.0.0.1) on this address", http.StatusForbidden)
			return
		}
		if r.Header.Get("Sec-Fetch-Site") == "cross-site" && r.Header.Get("Sec-Fetch-Mode") != "navigate" {
			// Another site's page loading something from here (an image,
			// a script, a fetch): none of it is for other sites. Following
			// a link to the sandbox (a navigation) is fine.
			http.Error(w, "forbidden: a request from another site's page", http.StatusForbidden)
			return
		}
		guarded.ServeHTTP(w, r)
	})
}

// IsLoopbackHost reports whether hostport (a Host header or an address,
// with or without a port) names the loopback interface: "localhost", a
// name under .localhost, or a loopback IP.
func IsLoopbackHost(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.Trim(host, "[]"), ".")
	if strings.EqualFold(host, "localhost") || strings.HasSuffix(strings.ToLower(host), ".localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

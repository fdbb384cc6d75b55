package webhook

// Internals the external tests check directly.
var (
	ParseRetryAfter = parseRetryAfter
	Jitter          = jitter
)

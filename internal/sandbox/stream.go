package sandbox

import (
	"fmt"
	"net/http"
	"time"
)

// Live updates: the page keeps one server-sent events stream open and
// fetches the state again when told something changed. Bursts (a click
// updates a message, publishes Home tabs and posts an ephemeral) are
// coalesced so the page re-renders once.
const (
	coalesce  = 40 * time.Millisecond
	heartbeat = 15 * time.Second
)

// handleEvents is GET /api/events: "change" events whenever the emulator
// or the sandbox changes.
func (sb *Sandbox) handleEvents(w http.ResponseWriter, r *http.Request) {
	flusher, ok := w.(http.Flusher)
	if !ok {
		http.Error(w, "streaming unsupported", http.StatusInternalServerError)
		return
	}
	// The server's WriteTimeout would cut the stream; this stream is
	// meant to stay open while the page does.
	_ = http.NewResponseController(w).SetWriteDeadline(time.Time{})
	events, cancel := sb.emu.Subscribe()
	defer cancel()
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	fmt.Fprint(w, "retry: 1000\n\n")
	flusher.Flush()

	beat := time.NewTicker(heartbeat)
	defer beat.Stop()
	changed := sb.nextChange()
	for {
		select {
		case <-r.Context().Done():
			return
		case <-sb.done:
			return
		case <-beat.C:
			fmt.Fprint(w, ": keep-alive\n\n")
			flusher.Flush()
			continue
		case _, ok := <-events:
			if !ok {
				return
			}
		case <-changed:
		}
		// Watch for the next change before the page hears of this one, so
		// that none falls between the page's fetch and the next wait.
		changed = sb.nextChange()
		// Let the rest of a burst arrive, then say it once.
		time.Sleep(coalesce)
		drain(events)
		fmt.Fprint(w, "event: change\ndata: {}\n\n")
		flusher.Flush()
	}
}

// nextChange returns the channel the next change of the sandbox's own state
// closes.
func (sb *Sandbox) nextChange() <-chan struct{} {
	sb.mu.Lock()
	defer sb.mu.Unlock()
	return sb.changed
}

func drain[T any](ch <-chan T) {
	for {
		select {
		case _, ok := <-ch:
			if !ok {
				return
			}
		default:
			return
		}
	}
}

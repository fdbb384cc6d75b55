package store

import (
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"syscall"

	"github.com/redis/go-redis/v9"
)

// Unavailable reports whether err means Redis did not answer in time or
// could not be reached (a deadline, a timeout, a refused or dropped
// connection, a pool with no free connection, a server loading or failing
// over), rather than that the operation was refused or malformed. Callers
// answer it with "try again later" (the API's 503 with Retry-After), never
// with a success and never as an internal error.
func Unavailable(err error) bool {
	if err == nil {
		return false
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, redis.ErrPoolTimeout) ||
		errors.Is(err, redis.ErrClosed) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) {
		return true
	}
	var netErr net.Error
	if errors.As(err, &netErr) {
		return true // timeouts, and dial or I/O failures (*net.OpError)
	}
	var rerr redis.Error
	if errors.As(err, &rerr) {
		// What a server answers while it cannot serve: loading its data,
		// a replica after failover, a cluster without its primary, a
		// script running too long.
		for _, prefix := range []string{"LOADING ", "READONLY ", "MASTERDOWN ", "TRYAGAIN ", "CLUSTERDOWN ", "BUSY "} {
			if strings.HasPrefix(rerr.Error(), prefix) {
				return true
			}
		}
	}
	return false
}

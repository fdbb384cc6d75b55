//go:build !linux

package redistest

import "syscall"

// dieWithParent has no portable equivalent off Linux; the server then
// outlives the test binary until the OS reaps it.
func dieWithParent() *syscall.SysProcAttr { return nil }

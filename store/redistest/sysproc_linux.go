package redistest

import "syscall"

// dieWithParent kills redis-server when the test binary exits, however it exits.
func dieWithParent() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}

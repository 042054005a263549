//go:build !linux

package failover

import "syscall"

// sysProcAttr puts a child in its own process group; without Linux's
// parent-death signal the suite's deferred stop is the only cleanup.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}

package failover

import "syscall"

// sysProcAttr puts a child in its own process group (a Ctrl-C at the
// terminal reaches the suite, which stops the children in order) and kills
// it if the suite dies without stopping it.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

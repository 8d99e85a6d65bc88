package facility

import "syscall"

// killWithParent makes the kernel kill a child when the test binary dies,
// so that a test killed by its timeout leaves no Prometheus behind on a
// shared machine.
func killWithParent() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}

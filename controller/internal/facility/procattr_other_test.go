//go:build !linux

package facility

import "syscall"

// killWithParent has no equivalent outside Linux; t.Cleanup still kills
// the child when the test ends normally.
func killWithParent() *syscall.SysProcAttr { return nil }

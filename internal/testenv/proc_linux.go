// Child processes of tests die with the test binary (Linux: the parent-death signal).
package testenv

import (
	"os/exec"
	"syscall"
)

func dieWithParent(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
}

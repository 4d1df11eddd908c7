//go:build !linux

// Child processes of tests: elsewhere there is no parent-death signal; the process is left to
// the operating system when the test binary exits.
package testenv

import "os/exec"

func dieWithParent(*exec.Cmd) {}

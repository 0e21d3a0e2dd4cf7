package redistest

import (
	"os"
	"os/exec"
	"syscall"
)

// dieWithParent makes the server die with the test binary, also when the
// binary is killed before it can stop the server.
func dieWithParent(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}

// stopSignal and contSignal pause and resume a process (Private.Pause).
var stopSignal, contSignal os.Signal = syscall.SIGSTOP, syscall.SIGCONT

//go:build !linux

package redistest

import (
	"os"
	"os/exec"
)

func dieWithParent(*exec.Cmd) {}

// stopSignal and contSignal: pausing a server is not supported here
// (Private.Pause skips the test).
var stopSignal, contSignal os.Signal

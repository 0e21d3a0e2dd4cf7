//go:build !unix

package cmpbench

import "time"

// cpuTime is not measured on this platform: no cpu-ns/op.
func cpuTime() time.Duration { return 0 }

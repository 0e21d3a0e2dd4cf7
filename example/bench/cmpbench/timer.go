package cmpbench

import (
	"testing"
	"time"
)

// timer is the benchmark's *testing.B with its timer methods also pausing
// and resuming a meter of the process's CPU time.
type timer struct {
	*testing.B
	cpu, start time.Duration
	running    bool
}

// newTimer returns a timer whose meter runs, like b's timer at the start
// of a benchmark function.
func newTimer(b *testing.B) *timer {
	return &timer{B: b, start: cpuTime(), running: true}
}

func (t *timer) StopTimer() {
	if t.running {
		t.cpu += cpuTime() - t.start
		t.running = false
	}
	t.B.StopTimer()
}

func (t *timer) StartTimer() {
	if !t.running {
		t.start = cpuTime()
		t.running = true
	}
	t.B.StartTimer()
}

func (t *timer) ResetTimer() {
	t.cpu = 0
	if t.running {
		t.start = cpuTime()
	}
	t.B.ResetTimer()
}

// report adds cpu-ns/op to the benchmark's results, where the platform can
// measure it.
func (t *timer) report() {
	if t.running {
		t.cpu += cpuTime() - t.start
		t.running = false
	}
	if cpuTime() > 0 && t.N > 0 {
		t.ReportMetric(float64(t.cpu.Nanoseconds())/float64(t.N), "cpu-ns/op")
	}
}

//go:build unix

package bqtest

import (
	"syscall"
	"time"
)

// ProcessCPU returns the user and system CPU time this process has used, or
// 0 when the platform does not tell. Benchmarks report CPU per message
// beside their rates, which a loaded host changes less.
func ProcessCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

//go:build unix

package babelqueue

import (
	"syscall"
	"time"
)

// processCPU returns the user and system CPU time the process used.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

//go:build !unix

package bqtest

import "time"

// ProcessCPU returns 0: this platform does not tell the CPU time of the
// process here (see cputime_unix.go).
func ProcessCPU() time.Duration { return 0 }

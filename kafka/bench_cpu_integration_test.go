//go:build integration

package kafka

import "github.com/babelqueue/babelqueue-go/core/bqtest"

// processCPU returns the user and system CPU time the process used: the
// benches report CPU per record beside the rates, which a loaded host
// changes less.
var processCPU = bqtest.ProcessCPU

// cpuPerRecord runs consume and returns its result and the process CPU
// time it took per record of total, in microseconds.
func cpuPerRecord(total int, consume func() float64) (rate, cpuMicros float64) {
	start := processCPU()
	rate = consume()
	return rate, float64((processCPU() - start).Microseconds()) / float64(total)
}

//go:build unix

package bqtest

import "testing"

func TestProcessCPUGrowsWithWork(t *testing.T) {
	start := ProcessCPU()
	x := 0
	for i := range 50_000_000 {
		x ^= i * i
	}
	if used := ProcessCPU() - start; used <= 0 {
		t.Fatalf("CPU used by a busy loop = %v (x=%d), want > 0", used, x)
	}
}

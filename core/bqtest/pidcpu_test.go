package bqtest

import (
	"os"
	"runtime"
	"testing"
	"time"
)

func TestPidCPUReadsThisProcess(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("no /proc on " + runtime.GOOS)
	}
	before := PidCPU(os.Getpid())
	for deadline := time.Now().Add(5 * time.Second); PidCPU(os.Getpid()) <= before; {
		if time.Now().After(deadline) {
			t.Fatalf("PidCPU of this process stayed at %v while it spun for 5 s", before)
		}
		for i := 0; i < 1_000_000; i++ {
			_ = i * i
		}
	}
	if got := PidCPU(-1); got != 0 {
		t.Errorf("PidCPU of no process = %v, want 0", got)
	}
}

package idempotency_test

import (
	"os"
	"testing"

	"github.com/babelqueue/babelqueue-go/idempotency"
	"github.com/babelqueue/babelqueue-go/idempotency/storetest"
)

// TestBenchOverheadMemory prints the overhead line of the memory store
// (make bench sets BQ_BENCH=1).
func TestBenchOverheadMemory(t *testing.T) {
	if os.Getenv("BQ_BENCH") == "" {
		t.Skip("benchmark: set BQ_BENCH=1 (make bench)")
	}
	storetest.PrintOverhead(t, "memory", idempotency.NewMemoryStore(nil), 200000)
}

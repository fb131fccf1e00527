package bqtest

import (
	"errors"
	"strings"
	"testing"

	"github.com/babelqueue/babelqueue-go/core/driver"
)

// TestNewInMemoryTransportPanicsWithEveryProblem: the test kit reports a
// misused option at construction, all problems together.
func TestNewInMemoryTransportPanicsWithEveryProblem(t *testing.T) {
	defer func() {
		err, _ := recover().(error)
		if !errors.Is(err, driver.ErrInvalidOption) || !strings.Contains(err.Error(), "clock is nil") || !strings.Contains(err.Error(), "tier 0s") ||
			!strings.Contains(err.Error(), "0 memory partitions") {
			t.Fatalf("recovered %v, want every problem wrapping ErrInvalidOption", err)
		}
	}()
	NewInMemoryTransport(WithMemoryClock(nil), nil, WithMemoryRetryTiers(0), WithMemoryPartitions(0))
}

//go:build integration

package demo

import (
	"testing"

	"github.com/babelqueue/babelqueue-go/brokertest"
)

// TestDemoOnKafka runs the whole example on the real Kafka broker started by
// tools/brokers, on topics and a group unique to the run.
func TestDemoOnKafka(t *testing.T) {
	checkRun(t, brokertest.KafkaBrokers(t))
}

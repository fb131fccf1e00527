package corebinding_test

import (
	"slices"
	"testing"

	"github.com/babelqueue/babelqueue-go/conformance"
	"github.com/babelqueue/babelqueue-go/conformance/corebinding"
)

// bindingBlocks are the blocks that need a broker binding; the core
// binding is expected to skip exactly these. (version_gate_settlement runs
// on the core App over the InMemoryTransport.)
var bindingBlocks = []string{
	"babelqueue_go.kafka_retry_tier",
	"babelqueue_go.kafka_delayed_publish",
	"babelqueue_go.kafka_reinject_headers",
	"babelqueue_go.kafka_reinject_wait",
	"babelqueue_go.kafka_publish_from",
	"babelqueue_go.pulsar_routing",
}

// TestSuite runs the whole embedded suite against package babelqueue (or
// the suite in BQ_CONFORMANCE_SUITE, for make conformance SUITE=DIR).
func TestSuite(t *testing.T) {
	rep := conformance.Run(t, "", corebinding.New())
	if rep.Suite != conformance.EmbeddedSuite {
		return // another suite (conformance.SuiteEnv): Run has checked every case; the counts below are the embedded suite's
	}
	var skipped []string
	for _, r := range rep.Results {
		if r.Status() == conformance.StatusSkipped {
			skipped = append(skipped, r.Block)
		}
		for _, c := range r.Cases {
			if c.Status != conformance.StatusSkipped {
				continue
			}
			t.Errorf("%s/%s skipped inside a block core implements: %s", r.Block, c.Name, c.Message)
		}
	}
	if !slices.Equal(skipped, bindingBlocks) {
		t.Errorf("skipped blocks = %q, want only the binding blocks %q", skipped, bindingBlocks)
	}
	passed, _, _ := rep.Totals()
	if passed < 250 {
		t.Errorf("only %d cases passed; the suite lost cases", passed)
	}
}

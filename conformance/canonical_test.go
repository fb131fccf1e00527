package conformance_test

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/babelqueue/babelqueue-go/conformance"
	"github.com/babelqueue/babelqueue-go/conformance/corebinding"
)

// TestCanonicalShapedSuite runs a suite laid out like the canonical
// BabelQueue suite (testdata/canonical-shape): the blocks this runner knows
// pass against the core binding, every other block is skipped, and a value
// a Kafka or Pulsar header cannot carry (a number) is a skipped case.
func TestCanonicalShapedSuite(t *testing.T) {
	s, err := conformance.LoadDir("testdata/canonical-shape")
	if err != nil {
		t.Fatal(err)
	}
	rep := conformance.RunSuite(context.Background(), s, corebinding.New())
	got := map[string]conformance.Status{}
	for _, r := range rep.Results {
		got[r.Block] = r.Status()
		for _, f := range r.Failures {
			t.Errorf("%s/%s: %s", r.Block, f.Case, f.Message)
		}
	}
	pass, skip := conformance.StatusPassed, conformance.StatusSkipped
	want := map[string]conformance.Status{
		"cases":                          pass,
		"idempotency.dedup_key":          pass,
		"idempotency.sequences":          pass,
		"sqs.attribute_projection":       skip,
		"sqs.attempts_reconciliation":    skip,
		"sqs.schema_version_gate":        skip,
		"asb.schema_version_gate":        skip,
		"pulsar.property_projection":     pass,
		"pulsar.attempts_reconciliation": pass,
		"pulsar.schema_version_gate":     pass,
		"kafka.property_projection":      pass,
		"kafka.attempts_reconciliation":  pass,
		"kafka.schema_version_gate":      pass,
		"redis.payload_identity":         skip,
		"payload_schema":                 pass,
		"roundtrip":                      pass,
		"data_shape":                     pass,
		"forbidden_keys":                 pass,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("block statuses (-want +got):\n%s", diff)
	}
	for _, r := range rep.Results {
		if r.Block == "kafka.schema_version_gate" && (r.Skipped != 1 || r.Passed != 5) {
			t.Errorf("kafka.schema_version_gate: %d passed, %d skipped; want the numeric value skipped and 5 passed", r.Passed, r.Skipped)
		}
	}
}

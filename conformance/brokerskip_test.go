package conformance

import "testing"

// TestBrokerSkipNamesTheOtherBrokersBlocks checks which broker a block
// belongs to and the skip reason each broker column gives for it.
func TestBrokerSkipNamesTheOtherBrokersBlocks(t *testing.T) {
	for _, c := range []struct{ block, owner, kafka, pulsar string }{
		{"kafka.headers", "kafka", "core rule: see core", "Kafka block"},
		{"babelqueue_go.kafka_tiers", "kafka", "core rule: see core", "Kafka block"},
		{"pulsar.properties", "pulsar", "Pulsar block", "core rule: see core"},
		{"babelqueue_go.pulsar_retry", "pulsar", "Pulsar block", "core rule: see core"},
		{"envelope.decode", "", "core rule: see core", "core rule: see core"},
		{"kafkaesque.x", "", "core rule: see core", "core rule: see core"},
	} {
		if got := BlockBroker(c.block); got != c.owner {
			t.Errorf("BlockBroker(%q) = %q, want %q", c.block, got, c.owner)
		}
		if got := BrokerSkip("kafka", c.block); got != c.kafka {
			t.Errorf("BrokerSkip(kafka, %q) = %q, want %q", c.block, got, c.kafka)
		}
		if got := BrokerSkip("pulsar", c.block); got != c.pulsar {
			t.Errorf("BrokerSkip(pulsar, %q) = %q, want %q", c.block, got, c.pulsar)
		}
	}
}

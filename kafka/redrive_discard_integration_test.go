//go:build integration

package kafka

import "testing"

// The discard scenario on the real Apache Kafka broker.
func TestIntegrationRedriveDiscard(t *testing.T) { scenarioDiscard(t, itEnv(t)) }

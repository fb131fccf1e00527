//go:build integration

package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/babelqueue/babelqueue-go/brokertest"
)

// clearConnEnv empties the connection variables bq reads, so a test sees
// only what it sets itself.
func clearConnEnv(t *testing.T) {
	t.Helper()
	for _, name := range []string{"BQ_BROKER", "BQ_TLS", "BQ_TLS_CA", "BQ_TLS_CERT", "BQ_TLS_KEY", "BQ_TLS_INSECURE",
		"BQ_SASL_MECHANISM", "BQ_SASL_USER", "BQ_SASL_PASSWORD", "BQ_PULSAR_TOKEN"} {
		t.Setenv(name, "")
	}
}

// tailOne runs `bq tail` (no follow) with args and returns the single
// envelope it shows.
func tailOne(t *testing.T, ctx context.Context, args ...string) recordView {
	t.Helper()
	out := mustBQ(t, ctx, append([]string{"tail", "--from-start", "--follow=false", "--json"}, args...)...)
	var v recordView
	if err := json.Unmarshal([]byte(strings.TrimSpace(out)), &v); err != nil {
		t.Fatalf("tail output %q: %v", out, err)
	}
	return v
}

// publishJSON runs `bq publish --json` with args and returns its result.
func publishJSON(t *testing.T, ctx context.Context, args ...string) publishResult {
	t.Helper()
	out := mustBQ(t, ctx, append([]string{"publish", "--json"}, args...)...)
	var pub publishResult
	if err := json.Unmarshal([]byte(out), &pub); err != nil || pub.ID == "" {
		t.Fatalf("publish output %q: %v", out, err)
	}
	return pub
}

func dlqStatsJSON(t *testing.T, ctx context.Context, args ...string) dlqStats {
	t.Helper()
	out := mustBQ(t, ctx, append([]string{"dlq", "stats", "--json"}, args...)...)
	var st dlqStats
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		t.Fatalf("dlq stats output %q: %v", out, err)
	}
	return st
}

// TestKafkaTLS runs publish, tail and dlq stats over the broker's SSL
// listener: the CA given by flag with kafka:// plus --tls-ca, and by
// environment with kafka+ssl://. Without the CA bq refuses the broker's
// certificate.
func TestKafkaTLS(t *testing.T) {
	clearConnEnv(t)
	brokers, ca := brokertest.KafkaTLS(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	hosts := strings.Join(brokers, ",")
	flagURL, envURL := "kafka://"+hosts, "kafka+ssl://"+hosts
	topic := brokertest.Topic(t, "bq-tls")

	mustBQ(t, ctx, "topics", "ensure", "--broker", flagURL, "--tls-ca", ca, "--topic", topic, "--tiers", "none")
	pub := publishJSON(t, ctx, "--broker", flagURL, "--tls-ca", ca, "--queue", topic, "--urn", "urn:bq:tls:kafka", "--data", `{"x":1}`)

	t.Setenv("BQ_TLS_CA", ca)
	v := tailOne(t, ctx, "--broker", envURL, "--queue", topic)
	if v.ID != pub.ID || v.URN != "urn:bq:tls:kafka" {
		t.Errorf("tail over TLS shows %+v, want id %s", v, pub.ID)
	}
	seedDLQ(t, ctx, topic+".dlq", []seedDeadLetter{
		{key: "k1", urn: "urn:bq:tls:a", reason: "failed", queue: topic},
		{key: "k2", urn: "urn:bq:tls:b", reason: "unknown_urn", queue: topic},
	})
	st := dlqStatsJSON(t, ctx, "--broker", envURL, "--queue", topic)
	if st.Total != 2 || st.ByReason["failed"] != 1 || st.ByURN["urn:bq:tls:b"] != 1 || st.ByOriginQueue[topic] != 2 {
		t.Errorf("dlq stats over TLS: %+v", st)
	}

	t.Setenv("BQ_TLS_CA", "")
	_, errOut, code := bq(t, ctx, "publish", "--broker", envURL, "--queue", topic, "--urn", "urn:bq:tls:refused", "--dial-timeout", "5s")
	if code != exitError || !strings.Contains(errOut, "certificate signed by unknown authority") {
		t.Errorf("publish without the CA: exit %d, stderr %q; want exit %d naming the unknown certificate authority", code, errOut, exitError)
	}
	if v := tailOne(t, ctx, "--broker", flagURL, "--tls-ca", ca, "--queue", topic); v.ID != pub.ID {
		t.Errorf("after the refused publish the topic shows %+v, want only %s", v, pub.ID)
	}
}

// TestKafkaSASLOverTLS publishes and tails through the SASL_SSL listener
// with SCRAM credentials from the environment.
func TestKafkaSASLOverTLS(t *testing.T) {
	clearConnEnv(t)
	brokers, user, password, ca := brokertest.KafkaSASLTLS(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	url := "kafka+ssl://" + strings.Join(brokers, ",")
	topic := brokertest.Topic(t, "bq-sasl-tls")
	t.Setenv("BQ_TLS_CA", ca)
	t.Setenv("BQ_SASL_MECHANISM", "scram-sha-512")
	t.Setenv("BQ_SASL_USER", user)
	t.Setenv("BQ_SASL_PASSWORD", password)
	mustBQ(t, ctx, "topics", "ensure", "--broker", url, "--topic", topic, "--tiers", "none")
	pub := publishJSON(t, ctx, "--broker", url, "--queue", topic, "--urn", "urn:bq:sasl-tls")
	if v := tailOne(t, ctx, "--broker", url, "--queue", topic, "--sasl-mechanism", "scram-sha-256"); v.ID != pub.ID || v.URN != "urn:bq:sasl-tls" {
		t.Errorf("tail over SASL_SSL shows %+v, want id %s", v, pub.ID)
	}
}

// TestPulsarTLSToken runs publish, tail and dlq stats over pulsar+ssl://
// with the CA trusted and the token from the environment, then checks that
// a token the broker did not sign is refused.
func TestPulsarTLSToken(t *testing.T) {
	url, ca := brokertest.PulsarTLS(t)
	token := brokertest.PulsarToken(t) // read before clearConnEnv: bq reads the same variable
	plainURL := brokertest.PulsarURL(t)
	clearConnEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	queue := brokertest.Topic(t, "bq-tls")
	dlq := queue + ".dlq"

	t.Setenv("BQ_PULSAR_TOKEN", token)
	pub := publishJSON(t, ctx, "--broker", url, "--tls-ca", ca, "--queue", queue, "--urn", "urn:bq:tls:pulsar", "--data", `{"x":2}`)
	v := tailOne(t, ctx, "--broker", url, "--tls-ca", ca, "--queue", queue)
	if v.ID != pub.ID || v.URN != "urn:bq:tls:pulsar" || v.MessageID == "" {
		t.Errorf("tail over TLS with a token shows %+v, want id %s", v, pub.ID)
	}
	seedPulsarDLQ(t, ctx, plainURL, dlq, []seedDeadLetter{
		{key: "p1", urn: "urn:bq:tls:a", reason: "failed", queue: queue},
		{key: "p2", urn: "urn:bq:tls:a", reason: "failed", queue: queue},
		{key: "p3", urn: "urn:bq:tls:b", reason: "poison", queue: queue},
	})
	t.Setenv("BQ_TLS_CA", ca)
	st := dlqStatsJSON(t, ctx, "--broker", url, "--dlq", dlq)
	if st.Total != 3 || st.ByURN["urn:bq:tls:a"] != 2 || st.ByReason["poison"] != 1 || st.ByOriginQueue[queue] != 3 {
		t.Errorf("dlq stats over TLS with a token: %+v", st)
	}

	// A token with the same claims signed by another key: the broker
	// refuses the connection, so nothing is published.
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		t.Fatalf("BQ_PULSAR_TOKEN is not a compact JWT")
	}
	t.Setenv("BQ_PULSAR_TOKEN", parts[0]+"."+parts[1]+".c2lnbmVkLWJ5LXNvbWVvbmUtZWxzZQ")
	_, errOut, code := bq(t, ctx, "publish", "--broker", url, "--queue", queue, "--urn", "urn:bq:tls:refused", "--dial-timeout", "3s")
	if code != exitError || errOut == "" {
		t.Errorf("publish with a forged token: exit %d, stderr %q; want exit %d with an error", code, errOut, exitError)
	}
	t.Setenv("BQ_PULSAR_TOKEN", token)
	if v := tailOne(t, ctx, "--broker", url, "--queue", queue); v.ID != pub.ID {
		t.Errorf("after the refused publish the queue shows %+v, want only %s", v, pub.ID)
	}
}

//go:build integration

package main

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/babelqueue/babelqueue-go/brokertest"
)

// TestKafkaConnectionCausesNamed checks that a failed connection names
// its real cause, at once rather than after the dial timeout: TLS against
// the plaintext listener, plaintext against the TLS listener, refused SASL
// credentials, and an untrusted certificate.
func TestKafkaConnectionCausesNamed(t *testing.T) {
	clearConnEnv(t)
	plain := strings.Join(brokertest.KafkaBrokers(t), ",")
	tlsHosts, ca := brokertest.KafkaTLS(t)
	saslHosts, user, _ := brokertest.KafkaSASL(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"TLS against plaintext", []string{"-b", "kafka+ssl://" + plain, "--tls-insecure"}, "does not speak TLS"},
		{"plaintext against TLS", []string{"-b", strings.Join(tlsHosts, ",")}, "speaks TLS, but WithTLS is not set"},
		{"SASL refused", []string{"-b", strings.Join(saslHosts, ","), "--sasl-mechanism", "scram-sha-512", "--sasl-user", user, "--sasl-password", "wrong"}, "refuses the SASL credentials"},
		{"untrusted certificate", []string{"-b", "kafka+ssl://" + strings.Join(tlsHosts, ",")}, "certificate is not accepted"},
	}
	_ = ca
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			start := time.Now()
			args := append([]string{"topics", "list", "--dial-timeout", "8s"}, c.args...)
			_, errOut, code := bq(t, ctx, args...)
			took := time.Since(start)
			if code != exitError || !strings.Contains(errOut, c.want) || !strings.Contains(errOut, "rejected") {
				t.Errorf("exit %d, stderr %q; want exit %d naming %q", code, errOut, exitError, c.want)
			}
			if took > 6*time.Second {
				t.Errorf("took %v: the cause should be known before the 8s dial timeout", took)
			}
			t.Logf("%s: %v: %s", c.name, took.Round(time.Millisecond), strings.TrimSpace(errOut))
		})
	}
}

// TestKafkaNewCommandsOnRealBroker runs topics list/describe, lag, tail
// from an offset, publish --stdin and dlq discard on the real broker.
func TestKafkaNewCommandsOnRealBroker(t *testing.T) {
	brokers := strings.Join(brokertest.KafkaBrokers(t), ",")
	clearConnEnv(t)
	clearBrokerEnv(t)
	t.Setenv(envKafkaBrokers, brokers)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	topic := brokertest.Topic(t, "bq-new")
	mustBQ(t, ctx, "topics", "ensure", "-t", topic, "-p", "2", "--tiers", "1s,2s")
	out := mustBQ(t, ctx, "topics", "list", "--prefix", topic)
	for _, s := range []string{topic + ".retry.2", topic + ".dlq", "retry", "dlq"} {
		if !strings.Contains(out, s) {
			t.Errorf("topics list lacks %q:\n%s", s, out)
		}
	}
	out = mustBQ(t, ctx, "topics", "describe", "-t", topic)
	if !strings.Contains(out, "retry tier 2: "+topic+".retry.2") || !strings.Contains(out, "message.timestamp.type") && !strings.Contains(out, "PARTITION") {
		t.Errorf("describe:\n%s", out)
	}
	describeRetry := mustBQ(t, ctx, "topics", "describe", "-t", topic+".retry.1")
	if !strings.Contains(describeRetry, "LogAppendTime") {
		t.Errorf("describe of a tier topic lacks its config:\n%s", describeRetry)
	}
	_, errOut, code := bq(t, ctx, "topics", "ensure", "-t", topic, "-p", "3")
	if code != exitError || !strings.Contains(errOut, "another partition count") {
		t.Errorf("partition mismatch: exit %d %s", code, errOut)
	}
	stdin = strings.NewReader("{\"n\":1}\n{\"n\":2}\n{\"n\":3}\n")
	defer func() { stdin = os.Stdin }()
	mustBQ(t, ctx, "publish", "-q", topic, "-u", "urn:bq:new:x", "--stdin", "-k", "one-key")
	out = mustBQ(t, ctx, "tail", "-q", topic, "--from-start", "--no-follow", "--format", "{partition} {offset} {key}")
	if strings.Count(out, "one-key") != 3 {
		t.Errorf("tail:\n%s", out)
	}
	out = mustBQ(t, ctx, "lag", "-g", "bq-nobody-"+topic, "-t", topic)
	if !strings.Contains(out, "total lag: 3") {
		t.Errorf("lag of a group that read nothing:\n%s", out)
	}
}

// TestPulsarNewCommandsOnRealBroker runs publish --stdin with a key,
// tail --since, lag, topics list/describe and dlq discard on the real
// Pulsar broker and its admin API.
func TestPulsarNewCommandsOnRealBroker(t *testing.T) {
	url, admin := brokertest.PulsarURL(t), brokertest.PulsarAdminURL(t)
	clearConnEnv(t)
	clearBrokerEnv(t)
	t.Setenv(envPulsarURL, url)
	t.Setenv(envPulsarAdmin, admin)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	queue := brokertest.Topic(t, "bq-new")
	stdin = strings.NewReader("{\"n\":1}\n{\"n\":2}\n")
	defer func() { stdin = os.Stdin }()
	mustBQ(t, ctx, "publish", "-q", queue, "-u", "urn:bq:new:p", "--stdin", "-k", "pk")
	out := mustBQ(t, ctx, "tail", "-q", queue, "--since", "10m", "--no-follow", "--format", "{key} {urn}")
	if strings.Count(out, "pk urn:bq:new:p") != 2 {
		t.Errorf("tail --since:\n%s", out)
	}
	out = mustBQ(t, ctx, "topics", "list", "--prefix", queue)
	if !strings.Contains(out, queue) {
		t.Errorf("topics list:\n%s", out)
	}
	seedPulsarDLQ(t, ctx, url, queue+".dlq", []seedDeadLetter{
		{key: "a", urn: "urn:bq:new:drop", reason: "failed", queue: queue},
		{key: "b", urn: "urn:bq:new:keep", reason: "failed", queue: queue},
	})
	record := t.TempDir() + "/discarded.jsonl"
	out = mustBQ(t, ctx, "dlq", "discard", "-q", queue, "-u", "urn:bq:new:drop", "--record", record, "--json")
	var rep redriveReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil || rep.Outcomes[outcomeDiscarded] != 1 || rep.Discarded != 1 {
		t.Fatalf("discard on Pulsar: %s %v", out, err)
	}
	if b, err := os.ReadFile(record); err != nil || !strings.Contains(string(b), "urn:bq:new:drop") {
		t.Errorf("record file %q %v", b, err)
	}
	// The redrive subscription now has the kept dead letter left.
	out = mustBQ(t, ctx, "lag", "-t", queue+".dlq", "-g", "bq-redrive")
	if !strings.Contains(out, "bq-redrive") {
		t.Errorf("lag on Pulsar:\n%s", out)
	}
	out = mustBQ(t, ctx, "topics", "describe", "-t", queue+".dlq")
	if !strings.Contains(out, "SUBSCRIPTION") {
		t.Errorf("describe on Pulsar:\n%s", out)
	}
}

// TestPulsarConnectionCausesNamed: TLS on one side only and an untrusted
// certificate are named, within the dial timeout.
func TestPulsarConnectionCausesNamed(t *testing.T) {
	plain := strings.TrimPrefix(brokertest.PulsarURL(t), "pulsar://")
	tlsURL, _ := brokertest.PulsarTLS(t)
	tlsHost := strings.TrimPrefix(tlsURL, "pulsar+ssl://")
	clearConnEnv(t)
	clearBrokerEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cases := []struct{ name, broker, want string }{
		{"TLS against plaintext", "pulsar+ssl://" + plain, "does not speak TLS"},
		{"plaintext against TLS", "pulsar://" + tlsHost, "speaks TLS, but TLS is not set"},
		{"untrusted certificate", "pulsar+ssl://" + tlsHost, "certificate is not accepted"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			start := time.Now()
			_, errOut, code := bq(t, ctx, "tail", "-q", "x", "--from-start", "--no-follow", "-b", c.broker, "--dial-timeout", "3s")
			if code != exitError || !strings.Contains(errOut, c.want) {
				t.Errorf("exit %d, stderr %q; want exit %d naming %q", code, errOut, exitError, c.want)
			}
			if took := time.Since(start); took > 5*time.Second {
				t.Errorf("took %v with --dial-timeout 3s", took)
			}
		})
	}
}

//go:build integration

package kafka

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/babelqueue/babelqueue-go/brokertest"
)

// roundTrip provisions a fresh topic through tr, publishes one envelope and
// pops it back, failing the test unless the same body arrives.
func roundTrip(t *testing.T, tr *Transport, prefix string) {
	t.Helper()
	topic := uniq(prefix)
	ensure(t, tr, topic, 1)
	ctx := bgCtx(t, 60*time.Second)
	body := envelope(t, 0)
	if err := tr.PublishWithHeaders(ctx, topic, body, map[string]string{"traceparent": "00-tls-01"}); err != nil {
		t.Fatalf("publish over TLS: %v", err)
	}
	m := popWithin(t, tr, topic, 30*time.Second)
	if m == nil {
		t.Fatal("nothing consumed over TLS within 30s")
	}
	if m.Body != body || m.Headers["traceparent"] != "00-tls-01" || m.Headers["bq-job"] == "" {
		t.Fatalf("consumed over TLS: body %q headers %v, want body %q with traceparent and bq-job", m.Body, m.Headers, body)
	}
	if err := tr.Ack(ctx, m); err != nil {
		t.Fatalf("ack over TLS: %v", err)
	}
}

func TestIntegrationTLSPublishConsume(t *testing.T) {
	brokers, ca := brokertest.KafkaTLS(t)
	tr := itSecureTransport(t, WithBrokers(brokers...), WithGroupID(uniq("g-tls")), WithTLS(brokertest.TLSConfig(t, ca)))
	roundTrip(t, tr, "it-tls")
}

func TestIntegrationSASLSCRAMOverTLS(t *testing.T) {
	brokers, user, pass, ca := brokertest.KafkaSASLTLS(t)
	for _, algo := range []SCRAMAlgorithm{SCRAMSHA256, SCRAMSHA512} {
		t.Run(scramName(algo), func(t *testing.T) {
			tr := itSecureTransport(t, WithBrokers(brokers...), WithGroupID(uniq("g-sasl-tls")),
				WithTLS(brokertest.TLSConfig(t, ca)), WithSASLSCRAM(algo, user, pass))
			roundTrip(t, tr, "it-sasl-tls")
		})
	}
}

// TestIntegrationTLSRejectsUntrustedCertificate checks that the broker's
// certificate is really verified: a client that does not trust the test CA,
// or that expects another host name, cannot publish (the error says why) nor
// create topics.
func TestIntegrationTLSRejectsUntrustedCertificate(t *testing.T) {
	brokers, ca := brokertest.KafkaTLS(t)
	wrongHost := brokertest.TLSConfig(t, ca)
	wrongHost.ServerName = "kafka.invalid"
	cases := map[string]struct {
		cfg  *tls.Config
		want func(error) bool
	}{
		// System roots only: the throwaway CA is unknown.
		"without the CA": {&tls.Config{MinVersion: tls.VersionTLS12}, func(err error) bool {
			var unknown x509.UnknownAuthorityError
			return errors.As(err, &unknown) || strings.Contains(err.Error(), "certificate signed by unknown authority")
		}},
		// The CA is trusted but the certificate is for 127.0.0.1/localhost.
		"wrong host name": {wrongHost, func(err error) bool {
			var host x509.HostnameError
			return errors.As(err, &host) || strings.Contains(err.Error(), "certificate is valid for")
		}},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			tr := itSecureTransport(t, WithBrokers(brokers...), WithTLS(c.cfg))
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			topic := uniq("it-tls-untrusted")
			err := tr.Publish(ctx, topic, envelope(t, 0))
			if err == nil {
				t.Fatal("publish succeeded against a certificate the client must not accept")
			}
			if !c.want(err) {
				t.Fatalf("publish failed, but not with the expected certificate error: %v", err)
			}
			t.Logf("refused as expected: %v", err)
			// kafka-go's admin client reports a failed TLS handshake as
			// "Broker Not Available", so only the failure itself is checked.
			if err := tr.EnsureTopics(ctx, topic, 1, 1); err == nil {
				t.Fatal("EnsureTopics succeeded against a certificate the client must not accept")
			}
		})
	}
}

// itSecureTransport builds a transport from opts alone (no PLAINTEXT
// broker is added), closed at cleanup.
func itSecureTransport(t *testing.T, opts ...Option) *Transport {
	t.Helper()
	tr, err := New(opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tr.Close() })
	return tr
}

func scramName(algo SCRAMAlgorithm) string {
	if algo == SCRAMSHA512 {
		return "SCRAM-SHA-512"
	}
	return "SCRAM-SHA-256"
}

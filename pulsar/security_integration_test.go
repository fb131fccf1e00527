//go:build integration

package pulsar

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"strings"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	"github.com/babelqueue/babelqueue-go/brokertest"
)

// secureTransport builds a Transport from opts alone (the caller gives the
// service URL), with short timeouts so a refused connection fails fast,
// closed at the end of the test.
func secureTransport(t *testing.T, opts ...Option) *Transport {
	t.Helper()
	all := append([]Option{WithTimeouts(5*time.Second, 10*time.Second), WithSubscriptionType(pulsar.Shared)}, opts...)
	tr, err := New(all...)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() { _ = tr.Close() })
	return tr
}

// refusalTimeouts bound a connection the broker is expected to refuse: the
// client retries until its operation timeout passes, then reports.
var refusalTimeouts = WithTimeouts(3*time.Second, 5*time.Second)

// publishAndReceive publishes a fresh envelope through tr and pops it back
// through tr, failing the test unless the same body and its projection
// arrive.
func publishAndReceive(t *testing.T, tr *Transport) {
	t.Helper()
	q := uniqueQueue(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	body := makeBody(t, "urn:bq:security:checked", q)
	if err := tr.PublishWithHeaders(ctx, q, body, map[string]string{"traceparent": "00-sec-01"}); err != nil {
		t.Fatalf("publish: %v", err)
	}
	msg, err := tr.Pop(ctx, q, 20*time.Second)
	if err != nil || msg == nil {
		t.Fatalf("Pop = %v, %v; want the published message", msg, err)
	}
	if msg.Body != body || msg.Headers["bq-job"] != "urn:bq:security:checked" || msg.Headers["traceparent"] != "00-sec-01" {
		t.Fatalf("received body %q headers %v, want body %q with bq-job and traceparent", msg.Body, msg.Headers, body)
	}
	if err := tr.Ack(ctx, msg); err != nil {
		t.Fatalf("ack: %v", err)
	}
}

// publishFails publishes once through tr and returns the error, failing the
// test when the publish succeeds.
func publishFails(t *testing.T, tr *Transport) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	q := uniqueQueue(t)
	err := tr.Publish(ctx, q, makeBody(t, "urn:bq:security:refused", q))
	if err == nil {
		t.Fatal("publish succeeded; want it refused")
	}
	t.Logf("refused as expected: %v", err)
	return err
}

func TestIntegrationTLSTrustedCA(t *testing.T) {
	url, ca := brokertest.PulsarTLS(t)
	tr := secureTransport(t, WithServiceURL(url), WithTLSTrustCerts(ca, true))
	publishAndReceive(t, tr)
}

func TestIntegrationTLSUntrustedCertificateRefused(t *testing.T) {
	url, _ := brokertest.PulsarTLS(t)
	// System roots only: the broker's throwaway CA is unknown.
	tr := secureTransport(t, WithServiceURL(url), refusalTimeouts)
	err := publishFails(t, tr)
	if !strings.Contains(err.Error(), "certificate signed by unknown authority") {
		t.Fatalf("error does not say the certificate was refused: %v", err)
	}
}

func TestIntegrationToken(t *testing.T) {
	token := brokertest.PulsarToken(t)
	t.Run("plain", func(t *testing.T) {
		publishAndReceive(t, secureTransport(t, WithServiceURL(brokertest.PulsarURL(t)), WithToken(token)))
	})
	t.Run("tls", func(t *testing.T) {
		url, ca := brokertest.PulsarTLS(t)
		publishAndReceive(t, secureTransport(t, WithServiceURL(url), WithTLSTrustCerts(ca, true), WithToken(token)))
	})
	t.Run("anonymous", func(t *testing.T) {
		// The broker authenticates, but lets clients without a token in.
		publishAndReceive(t, secureTransport(t, WithServiceURL(brokertest.PulsarURL(t))))
	})
}

func TestIntegrationInvalidTokenRefused(t *testing.T) {
	valid := brokertest.PulsarToken(t)
	url, ca := brokertest.PulsarTLS(t)
	cases := map[string]string{
		// Well formed, with the broker's claims, signed with another key.
		"foreign signature": forgeToken(t, valid),
		"not a JWT":         "not-a-token",
	}
	for name, token := range cases {
		t.Run(name, func(t *testing.T) {
			for _, o := range [][]Option{
				{WithServiceURL(brokertest.PulsarURL(t))},
				{WithServiceURL(url), WithTLSTrustCerts(ca, true)},
			} {
				tr := secureTransport(t, append(o, WithToken(token), refusalTimeouts)...)
				err := publishFails(t, tr)
				if !strings.Contains(err.Error(), "Failed to authenticate") {
					t.Fatalf("error does not say the broker refused the token: %v", err)
				}
			}
		})
	}
}

// forgeToken returns a token with the header and claims of valid, signed
// with a random HMAC key instead of the broker's.
func forgeToken(t *testing.T, valid string) string {
	t.Helper()
	parts := strings.Split(valid, ".")
	if len(parts) != 3 {
		t.Fatalf("BQ_PULSAR_TOKEN is not a compact JWT (%d parts)", len(parts))
	}
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		t.Fatal(err)
	}
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(parts[0] + "." + parts[1]))
	forged := parts[0] + "." + parts[1] + "." + base64.RawURLEncoding.EncodeToString(mac.Sum(nil))
	if forged == valid {
		t.Fatal("forged token equals the valid one")
	}
	return forged
}

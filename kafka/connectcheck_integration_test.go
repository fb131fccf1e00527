//go:build integration

package kafka

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/babelqueue/babelqueue-go/brokertest"
	babelqueue "github.com/babelqueue/babelqueue-go/core"
	"github.com/babelqueue/babelqueue-go/core/redrive"
)

// TestIntegrationRejectedConnectionSettingsFailFast checks, against the real
// broker's listeners, that settings the broker rejects make Pop, EnsureTopics
// Redrive and the re-injector fail with ErrConnectionRejected and the reason, instead of an
// empty poll that lasts forever or kafka-go's "Broker Not Available".
func TestIntegrationRejectedConnectionSettingsFailFast(t *testing.T) {
	tlsBrokers, ca := brokertest.KafkaTLS(t)
	saslBrokers, user, pass := brokertest.KafkaSASL(t)
	plain := brokerList(t)
	noCA := &tls.Config{MinVersion: tls.VersionTLS12}
	cases := []struct {
		name string
		opts []Option
		want string // in the error's text
		as   func(error) bool
	}{
		{name: "TLS listener, CA not trusted", opts: []Option{WithBrokers(tlsBrokers...), WithTLS(noCA)}, want: "certificate is not accepted",
			as: func(err error) bool { var u x509.UnknownAuthorityError; return errors.As(err, &u) }},
		{name: "TLS listener, plain client", opts: []Option{WithBrokers(tlsBrokers...)}, want: "speaks TLS, but WithTLS is not set"},
		{name: "plain listener, TLS client", opts: []Option{WithBrokers(plain...), WithTLS(brokertest.TLSConfig(t, ca))}, want: "does not speak TLS"},
		{name: "SASL listener, wrong password", opts: []Option{WithBrokers(saslBrokers...), WithSASLSCRAM(SCRAMSHA512, user, pass+"-wrong")}, want: "refuses the SASL credentials"},
		{name: "SASL listener, no SASL", opts: []Option{WithBrokers(saslBrokers...)}, want: "requires SASL authentication"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			check := func(what string, err error) {
				t.Helper()
				if !errors.Is(err, ErrConnectionRejected) || !errors.Is(err, babelqueue.ErrInvalidOption) {
					t.Fatalf("%s = %v, want ErrConnectionRejected", what, err)
				}
				if !strings.Contains(err.Error(), c.want) {
					t.Fatalf("%s = %v, want the reason %q", what, err, c.want)
				}
				if c.as != nil && !c.as(err) {
					t.Fatalf("%s = %v: the cause is not matchable", what, err)
				}
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			tr := itSecureTransport(t, append([]Option{WithGroupID(uniq("g")), WithRetryTiers(time.Second)}, c.opts...)...)
			m, err := tr.Pop(ctx, uniq("it-reject"), 2*time.Second)
			if m != nil {
				t.Fatalf("Pop got a message: %v", m)
			}
			check("Pop", err)
			check("EnsureTopics", tr.EnsureTopics(ctx, uniq("it-reject"), 1, 1))
			_, err = redrive.Run(ctx, tr, uniq("it-reject")+".dlq")
			check("Redrive", err)
			r, err := tr.NewReinjector(uniq("it-reject"))
			if err != nil {
				t.Fatal(err)
			}
			check("Reinjector.Run", r.Run(ctx))
		})
	}
}

// TestIntegrationBrokerDownIsNotARejection checks that a broker that does not
// listen is still waited for: Pop polls empty, as before, and the same
// transport consumes once the address is right.
func TestIntegrationBrokerDownIsNotARejection(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	down := l.Addr().String()
	_ = l.Close() // nothing listens there now
	tr := itSecureTransport(t, WithBrokers(down), WithGroupID(uniq("g")))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	m, err := tr.Pop(ctx, uniq("it-down"), time.Second)
	if m != nil || err != nil {
		t.Fatalf("Pop with the broker down = %v, %v; want an empty poll", m, err)
	}
	if err := tr.EnsureTopics(ctx, uniq("it-down"), 1, 1); err == nil || errors.Is(err, ErrConnectionRejected) {
		t.Fatalf("EnsureTopics with the broker down = %v; want a failure that is not a rejection", err)
	}
}

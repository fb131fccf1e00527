package kafka

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"testing"

	kafkago "github.com/segmentio/kafka-go"
	"github.com/segmentio/kafka-go/sasl/plain"
)

// closedAddr returns a loopback address nothing listens on.
func closedAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close()
	return addr
}

func TestRejectionTellsSettingsFromOutages(t *testing.T) {
	addr := closedAddr(t) // so that no listener answers the follow-up probes
	plainDialer := &kafkago.Dialer{}
	tlsDialer := &kafkago.Dialer{TLS: &tls.Config{MinVersion: tls.VersionTLS12}}
	saslDialer := &kafkago.Dialer{SASLMechanism: plain.Mechanism{Username: "u", Password: "p"}}
	cases := []struct {
		name     string
		d        *kafkago.Dialer
		err      error
		rejected bool
	}{
		{"untrusted certificate", tlsDialer, fmt.Errorf("failed to dial: %w", x509.UnknownAuthorityError{}), true},
		{"certificate for another host", tlsDialer, x509.HostnameError{Host: "kafka.invalid", Certificate: &x509.Certificate{}}, true},
		{"not a TLS listener", tlsDialer, tls.RecordHeaderError{Msg: "first record does not look like a TLS handshake"}, true},
		{"SASL refused", saslDialer, fmt.Errorf("SASL handshake: %w", kafkago.SASLAuthenticationFailed), true},
		{"mechanism refused", saslDialer, kafkago.UnsupportedSASLMechanism, true},
		{"metadata refused after the versions, no SASL set", plainDialer, errAfterVersions{io.EOF}, true},
		{"metadata refused after the versions, SASL set", saslDialer, errAfterVersions{io.EOF}, false},
		{"closed before any answer, not a TLS listener", plainDialer, io.EOF, false},
		{"TLS client closed, not a plain listener", tlsDialer, io.ErrUnexpectedEOF, false},
		{"connection refused", plainDialer, &net.OpError{Op: "dial", Err: errors.New("connection refused")}, false},
		{"a rebalance", plainDialer, kafkago.RebalanceInProgress, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			why := rejection(context.Background(), c.d, addr, c.err)
			if (why != nil) != c.rejected {
				t.Fatalf("rejection = %v, want rejected %v", why, c.rejected)
			}
			if why != nil && !errors.Is(why, c.err) {
				t.Fatalf("the reason %v does not wrap the cause %v", why, c.err)
			}
		})
	}
}

func TestCheckConnectionWithoutBrokerSettings(t *testing.T) {
	tr := &Transport{} // a transport over an injected writer and readers
	if err := tr.checkConnection(context.Background()); err != nil {
		t.Fatalf("checkConnection without a dialer = %v", err)
	}
	tr = &Transport{cfg: config{brokers: []string{closedAddr(t)}}, dialer: &kafkago.Dialer{}}
	if err := tr.checkConnection(context.Background()); err != nil {
		t.Fatalf("checkConnection with the broker down = %v, want nil (the readers wait for it)", err)
	}
	if tr.connChecked.Load() {
		t.Fatal("a broker that never answered counts as checked")
	}
}

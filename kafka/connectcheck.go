package kafka

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"
	"time"

	kafkago "github.com/segmentio/kafka-go"
)

// connectCheckTimeout bounds the whole connection check of one broker.
const connectCheckTimeout = 5 * time.Second

// CheckConnection connects to the configured brokers with the transport's
// TLS and SASL settings until one answers. It returns an error wrapping
// ErrConnectionRejected, naming the broker and the reason (certificate
// not accepted, TLS on one side only, SASL refused), when no broker
// answers and one rejects the settings; otherwise nil, also when the
// brokers are merely down. ctx bounds the whole check. Tools call it to
// name the real cause of a failed connection.
func (t *Transport) CheckConnection(ctx context.Context) error {
	return t.checkConnection(ctx)
}

// checkConnection connects to the configured brokers as the transport's
// group readers do, and makes two requests, until one broker answers. When
// no broker answers and one of them rejects the connection settings, it
// returns an error wrapping ErrConnectionRejected; otherwise nil. A broker
// that is down or unreachable is not an error here: the group readers wait
// for it as they always did. kafka-go's readers only log what their
// connections fail with and retry forever, and its admin client reports
// every failed connection as "Broker Not Available", so without this check
// a wrong certificate or password would look like an idle topic.
func (t *Transport) checkConnection(ctx context.Context) error {
	if t.dialer == nil || t.connChecked.Load() {
		return nil
	}
	var rejected error
	for _, addr := range t.cfg.brokers {
		err := checkBroker(ctx, t.dialer, addr)
		if err == nil {
			t.connChecked.Store(true)
			return nil
		}
		if why := rejection(ctx, t.dialer, addr, err); why != nil && rejected == nil {
			rejected = fmt.Errorf("connect to %s: %w: %w", addr, ErrConnectionRejected, why)
		}
	}
	return rejected
}

// checkBroker dials addr with d (TLS handshake and SASL authentication
// included), then asks for the API versions and the cluster metadata.
func checkBroker(ctx context.Context, d *kafkago.Dialer, addr string) error {
	ctx, cancel := context.WithTimeout(ctx, connectCheckTimeout)
	defer cancel()
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return err
	}
	defer conn.Close()
	if deadline, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(deadline)
	}
	// A cancelled ctx ends a request in flight at once, not at the deadline.
	defer context.AfterFunc(ctx, func() { _ = conn.SetDeadline(time.Unix(1, 0)) })()
	if _, err := conn.ApiVersions(); err != nil {
		return err
	}
	if _, err := conn.Brokers(); err != nil {
		return errAfterVersions{err}
	}
	return nil
}

// errAfterVersions is a failure of the metadata request of a broker that
// answered the API versions request, which Kafka serves before SASL
// authentication.
type errAfterVersions struct{ err error }

func (e errAfterVersions) Error() string { return e.err.Error() }
func (e errAfterVersions) Unwrap() error { return e.err }

// rejection returns why err, the failed check of addr, shows settings the
// broker's listener rejects, or nil when it may heal (a broker down,
// restarting or unreachable).
func rejection(ctx context.Context, d *kafkago.Dialer, addr string, err error) error {
	var unknown x509.UnknownAuthorityError
	var host x509.HostnameError
	var invalid x509.CertificateInvalidError
	var notTLS tls.RecordHeaderError
	switch {
	case errors.As(err, &unknown), errors.As(err, &host), errors.As(err, &invalid):
		return fmt.Errorf("the broker's TLS certificate is not accepted: %w", err)
	case errors.As(err, &notTLS):
		return fmt.Errorf("the listener does not speak TLS, but WithTLS is set: %w", err)
	case errors.Is(err, kafkago.SASLAuthenticationFailed), errors.Is(err, kafkago.UnsupportedSASLMechanism),
		errors.Is(err, kafkago.IllegalSASLState):
		return fmt.Errorf("the broker refuses the SASL credentials or mechanism: %w", err)
	}
	if !closedByPeer(err) {
		return nil
	}
	if d.TLS != nil {
		// A plain listener closes a connection that starts with a TLS
		// handshake, which it reads as an oversized request.
		if speaksPlainKafka(ctx, addr) {
			return fmt.Errorf("the listener does not speak TLS, but WithTLS is set: %w", err)
		}
		return nil
	}
	// A plain connection the broker closed: a TLS listener does that with
	// the first request, and a SASL listener with the first request after
	// the API versions.
	if speaksTLS(ctx, addr) {
		return fmt.Errorf("the listener speaks TLS, but WithTLS is not set: %w", err)
	}
	var after errAfterVersions
	if d.SASLMechanism == nil && errors.As(err, &after) {
		return fmt.Errorf("the listener closed the connection after the API versions request, as one that requires SASL authentication does, but no SASL mechanism is set: %w", err)
	}
	return nil
}

// closedByPeer reports whether err is the end of a connection the broker
// closed or reset.
func closedByPeer(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, syscall.EPIPE)
}

// speaksPlainKafka reports whether the listener at addr answers an API
// versions request over a plain connection.
func speaksPlainKafka(ctx context.Context, addr string) bool {
	return checkBroker(ctx, &kafkago.Dialer{Timeout: connectCheckTimeout, ClientID: clientID}, addr) == nil
}

// speaksTLS reports whether the listener at addr completes a TLS
// handshake. The certificate is not verified: the handshake only tells
// what the listener speaks, and nothing is sent over it.
func speaksTLS(ctx context.Context, addr string) bool {
	ctx, cancel := context.WithTimeout(ctx, connectCheckTimeout)
	defer cancel()
	dialer := &tls.Dialer{NetDialer: &net.Dialer{}, Config: &tls.Config{InsecureSkipVerify: true, MinVersion: tls.VersionTLS12}} // #nosec G402 -- detection only, nothing is sent
	conn, err := dialer.DialContext(ctx, "tcp", addr)
	if err != nil {
		return false
	}
	_ = conn.Close()
	return true
}

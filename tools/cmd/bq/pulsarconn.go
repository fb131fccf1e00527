package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	plog "github.com/apache/pulsar-client-go/pulsar/log"
	bqpulsar "github.com/babelqueue/babelqueue-go/pulsar"
)

// pulsarConn is a Pulsar client for the flags plus the babelqueue
// transport options matching it.
type pulsarConn struct {
	client  pulsar.Client
	url     string
	flags   *connFlags
	brokerU brokerURL
}

// quietLogger keeps the Pulsar client's own logging off the terminal
// except for errors.
func quietLogger() plog.Logger {
	return plog.NewLoggerWithSlog(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError})))
}

// discardLogger is a slog logger that writes nothing.
func discardLogger() *slog.Logger {
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

// pulsar connects to the Pulsar cluster of the flags. A TCP dial to each
// host, bounded by the dial timeout, runs first so an unreachable broker
// fails fast.
func (c *connFlags) pulsar(ctx context.Context, u brokerURL) (*pulsarConn, error) {
	if u.Kind != kindPulsar {
		return nil, usagef("this command needs a Pulsar broker (pulsar://host:port), got %s", u.Kind)
	}
	var errs []error
	var why []string
	reached := false
	for _, h := range u.Hosts {
		d := net.Dialer{Timeout: c.dialTimeout}
		conn, err := d.DialContext(ctx, "tcp", h)
		if err == nil {
			conn.Close()
			reached = true
			break
		}
		errs = append(errs, err)
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			why = append(why, fmt.Sprintf("%s: no answer within %v", h, c.dialTimeout))
		} else {
			why = append(why, h+": "+dialCause(err))
		}
	}
	if !reached {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, &unreachableError{msg: fmt.Sprintf("%v: no Pulsar broker could be reached: %s", errUnreachable, strings.Join(why, "; ")), errs: errs}
	}
	opts := pulsar.ClientOptions{
		URL:               u.pulsarServiceURL(),
		ConnectionTimeout: c.dialTimeout,
		OperationTimeout:  c.timeout,
		Logger:            quietLogger(),
	}
	if c.useTLS(u) {
		opts.TLSTrustCertsFilePath = c.tlsCA
		opts.TLSAllowInsecureConnection = c.tlsInsecure
		opts.TLSValidateHostname = !c.tlsInsecure
		if c.tlsCert != "" {
			opts.Authentication = pulsar.NewAuthenticationTLS(c.tlsCert, c.tlsKey)
		}
	}
	if c.pulsarToken != "" {
		opts.Authentication = pulsar.NewAuthenticationToken(c.pulsarToken)
	}
	cl, err := pulsar.NewClient(opts)
	if err != nil {
		return nil, fmt.Errorf("pulsar client for %s: %w", opts.URL, err)
	}
	// The TLS diagnosis runs beside the probe, so a listener that never
	// answers costs one dial timeout, not two.
	tcfg, _ := c.tlsConfig(u)
	dctx, stopDiag := context.WithTimeout(ctx, c.dialTimeout)
	defer stopDiag()
	diag := make(chan string, 1)
	go func() { diag <- diagnoseTLS(dctx, u.Hosts[0], tcfg) }()
	if err := probePulsar(ctx, cl, opts.URL, c.dialTimeout); err != nil {
		if errors.Is(err, errUnreachable) {
			select {
			case why := <-diag:
				if why != "" {
					return nil, fmt.Errorf("%w: %s: %s", errRejected, opts.URL, why)
				}
			case <-time.After(50 * time.Millisecond):
			}
		}
		return nil, err
	}
	return &pulsarConn{client: cl, url: opts.URL, flags: c, brokerU: u}, nil
}

// probeTopic is looked up (never created) to check that the broker
// completes the Pulsar handshake, TLS and authentication included.
const probeTopic = "persistent://public/default/bq-connection-probe"

// probePulsar asks the broker for a topic's partitions, bounded by d and
// ctx. The Pulsar client waits for a connection's handshake without a
// bound (waitUntilReady), so the lookup runs in a goroutine that is
// abandoned when it does not return in time: the command then fails and
// the process exits. Its error names the cause when it is known.
func probePulsar(ctx context.Context, cl pulsar.Client, url string, d time.Duration) error {
	done := make(chan error, 1) // buffered: an abandoned probe never blocks
	go func() {
		_, err := cl.TopicPartitions(probeTopic)
		done <- err
	}()
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case err := <-done:
		if err == nil {
			return nil
		}
		if why := pulsarCause(err); why != "" {
			return fmt.Errorf("%w: %s: %s: %w", errRejected, url, why, err)
		}
		return fmt.Errorf("%w: %s: %w", errUnreachable, url, err)
	case <-timer.C:
		return fmt.Errorf("%w: %s accepted the connection but did not complete the Pulsar handshake within %v (a frozen broker, or a port that is not a Pulsar listener; TLS on one side only looks the same)", errUnreachable, url, d)
	case <-ctx.Done():
		return ctx.Err()
	}
}

// pulsarCause names the rejected setting behind a failed Pulsar
// connection, or "" when the error does not show one.
func pulsarCause(err error) string {
	var unknown x509.UnknownAuthorityError
	var host x509.HostnameError
	var invalid x509.CertificateInvalidError
	var notTLS tls.RecordHeaderError
	msg := strings.ToLower(err.Error())
	switch {
	case errors.As(err, &unknown), errors.As(err, &host), errors.As(err, &invalid), strings.Contains(msg, "x509:"):
		return "the broker's TLS certificate is not accepted"
	case errors.As(err, &notTLS), strings.Contains(msg, "first record does not look like a tls handshake"):
		return "the listener does not speak TLS, but TLS is set"
	case strings.Contains(msg, "authenticationerror"), strings.Contains(msg, "authentication"), strings.Contains(msg, "unauthorized"):
		return "the broker refuses the credentials (--pulsar-token, client certificate)"
	}
	return ""
}

// topic maps a queue name to its topic the way the transport does without
// a prefix: a name with "://" is used as it is, else Pulsar resolves it
// in public/default.
func (p *pulsarConn) topic(queue string) string {
	return queue
}

// transport builds a babelqueue Pulsar transport sharing the client.
func (p *pulsarConn) transport(opts ...bqpulsar.Option) (*bqpulsar.Transport, error) {
	all := append([]bqpulsar.Option{bqpulsar.WithClient(p.client), bqpulsar.WithLogger(discardLogger()),
		bqpulsar.WithSubscriptionType(pulsar.Shared)}, opts...)
	return bqpulsar.New(all...)
}

// diagnoseTLS tells why a listener that accepted the connection did not
// complete the handshake, when TLS explains it: tcfg (nil without TLS)
// against a plaintext listener, plaintext against a TLS listener, or a
// certificate the configuration does not accept. "" when TLS does not
// explain it. ctx bounds the check.
func diagnoseTLS(ctx context.Context, addr string, tcfg *tls.Config) string {
	probe := tcfg
	if probe == nil {
		probe = &tls.Config{InsecureSkipVerify: true, MinVersion: tls.VersionTLS12} // #nosec G402 -- detection only, nothing is sent
	} else {
		probe = probe.Clone()
	}
	if probe.ServerName == "" {
		host, _, _ := net.SplitHostPort(addr)
		probe.ServerName = host
	}
	conn, err := (&tls.Dialer{NetDialer: &net.Dialer{}, Config: probe}).DialContext(ctx, "tcp", addr)
	if err == nil {
		conn.Close()
		if tcfg == nil {
			return "the listener speaks TLS, but TLS is not set (use pulsar+ssl:// and --tls-ca)"
		}
		return ""
	}
	if tcfg == nil || ctx.Err() != nil {
		return ""
	}
	if why := pulsarCause(err); why != "" {
		return why + ": " + err.Error()
	}
	var rec tls.RecordHeaderError
	if errors.As(err, &rec) || closedConn(err) {
		return "the listener does not speak TLS, but TLS is set: " + err.Error()
	}
	return ""
}

// closedConn reports whether err is a connection the peer closed.
func closedConn(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET)
}

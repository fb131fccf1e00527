package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"strings"
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
		return nil, fmt.Errorf("this command needs a Pulsar broker (pulsar://host:port), got %s", u.Kind)
	}
	var errs []error
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
	}
	if !reached {
		return nil, fmt.Errorf("%w: no Pulsar broker of %s answered within %v: %w", errUnreachable, strings.Join(u.Hosts, ","), c.dialTimeout, errors.Join(errs...))
	}
	opts := pulsar.ClientOptions{
		URL:               u.pulsarServiceURL(),
		ConnectionTimeout: c.dialTimeout,
		OperationTimeout:  30 * time.Second,
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
	return &pulsarConn{client: cl, url: opts.URL, flags: c, brokerU: u}, nil
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

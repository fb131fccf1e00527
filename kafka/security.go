package kafka

import (
	"crypto/tls"

	"github.com/segmentio/kafka-go/sasl"
	"github.com/segmentio/kafka-go/sasl/plain"
	"github.com/segmentio/kafka-go/sasl/scram"
)

// SCRAMAlgorithm names the hash of a SASL/SCRAM mechanism.
type SCRAMAlgorithm int

const (
	// SCRAMSHA256 is SASL mechanism SCRAM-SHA-256.
	SCRAMSHA256 SCRAMAlgorithm = iota + 1
	// SCRAMSHA512 is SASL mechanism SCRAM-SHA-512.
	SCRAMSHA512
)

// WithTLS makes every connection (writer, readers, group members, admin
// calls) use TLS with cfg. nil is rejected.
func WithTLS(cfg *tls.Config) Option {
	return func(c *config) {
		if cfg == nil {
			c.fail("nil TLS config")
			return
		}
		c.tls = cfg
	}
}

// WithSASL authenticates every connection with mechanism m. nil is rejected.
func WithSASL(m sasl.Mechanism) Option {
	return func(c *config) {
		if m == nil {
			c.fail("nil SASL mechanism")
			return
		}
		c.setSASL("WithSASL", m)
	}
}

// setSASL sets the SASL mechanism, recording a conflict when another
// option already set one: a connection authenticates one way.
func (c *config) setSASL(by string, m sasl.Mechanism) {
	if c.saslBy != "" {
		c.fail("%s and %s both set the SASL mechanism; give one", c.saslBy, by)
		return
	}
	c.sasl, c.saslBy = m, by
}

// WithSASLPlain authenticates with SASL/PLAIN. Combine it with WithTLS
// outside a trusted network: PLAIN sends the password as is. A blank user
// is rejected.
func WithSASLPlain(user, password string) Option {
	return func(c *config) {
		if isBlank(user) {
			c.fail("blank SASL/PLAIN user")
			return
		}
		c.setSASL("WithSASLPlain", plain.Mechanism{Username: user, Password: password})
	}
}

// WithSASLSCRAM authenticates with SASL/SCRAM-SHA-256 or SCRAM-SHA-512. A
// blank user or an unknown algorithm is rejected.
func WithSASLSCRAM(algo SCRAMAlgorithm, user, password string) Option {
	return func(c *config) {
		if isBlank(user) {
			c.fail("blank SASL/SCRAM user")
			return
		}
		var a scram.Algorithm
		switch algo {
		case SCRAMSHA256:
			a = scram.SHA256
		case SCRAMSHA512:
			a = scram.SHA512
		default:
			c.fail("unknown SCRAM algorithm %d", int(algo))
			return
		}
		m, err := scram.Mechanism(a, user, password)
		if err != nil {
			c.fail("SASL/SCRAM: %v", err)
			return
		}
		c.setSASL("WithSASLSCRAM", m)
	}
}

package main

import (
	"crypto/tls"
	"crypto/x509"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"
)

// connFlags are the broker connection flags shared by every command that
// talks to a broker. Each flag defaults to an environment variable, so
// secrets need not appear on the command line.
type connFlags struct {
	broker       string
	tls          bool
	tlsCA        string
	tlsCert      string
	tlsKey       string
	tlsInsecure  bool
	saslMech     string
	saslUser     string
	saslPassword string
	pulsarToken  string
	dialTimeout  time.Duration

	// Secrets from the environment. They are not flag defaults, so --help
	// never prints them; check applies them when the flag is not given.
	// An ambient BQ_PULSAR_TOKEN is ignored on Kafka, where only an explicit
	// --pulsar-token is an error.
	envSASLPassword string
	envPulsarToken  string
}

// connEnvHelp lists the environment variables of connFlags.
const connEnvHelp = `Connection environment variables (flags win):
  BQ_BROKER            broker URL: kafka://host:port[,host:port], kafka+ssl://...,
                       pulsar://host:port, pulsar+ssl://...
  BQ_TLS=1             use TLS (implied by kafka+ssl:// and pulsar+ssl://)
  BQ_TLS_CA, BQ_TLS_CERT, BQ_TLS_KEY, BQ_TLS_INSECURE=1
  BQ_SASL_MECHANISM    Kafka: plain, scram-sha-256 or scram-sha-512
  BQ_SASL_USER, BQ_SASL_PASSWORD
  BQ_PULSAR_TOKEN      Pulsar JWT token`

func envBool(name string) bool {
	switch strings.ToLower(os.Getenv(name)) {
	case "1", "true", "yes", "on":
		return true
	}
	return false
}

// register adds the connection flags to fs.
func (c *connFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&c.broker, "broker", os.Getenv("BQ_BROKER"), "broker URL: kafka://host:port[,host:port] or pulsar://host:port (env BQ_BROKER)")
	fs.BoolVar(&c.tls, "tls", envBool("BQ_TLS"), "connect with TLS (env BQ_TLS)")
	fs.StringVar(&c.tlsCA, "tls-ca", os.Getenv("BQ_TLS_CA"), "PEM file of CA certificates to trust (env BQ_TLS_CA)")
	fs.StringVar(&c.tlsCert, "tls-cert", os.Getenv("BQ_TLS_CERT"), "PEM client certificate for mutual TLS (env BQ_TLS_CERT)")
	fs.StringVar(&c.tlsKey, "tls-key", os.Getenv("BQ_TLS_KEY"), "PEM client key for mutual TLS (env BQ_TLS_KEY)")
	fs.BoolVar(&c.tlsInsecure, "tls-insecure", envBool("BQ_TLS_INSECURE"), "skip server certificate verification (testing only; env BQ_TLS_INSECURE)")
	fs.StringVar(&c.saslMech, "sasl-mechanism", os.Getenv("BQ_SASL_MECHANISM"), "Kafka SASL mechanism: plain, scram-sha-256, scram-sha-512 (env BQ_SASL_MECHANISM)")
	fs.StringVar(&c.saslUser, "sasl-user", os.Getenv("BQ_SASL_USER"), "SASL user (env BQ_SASL_USER)")
	c.envSASLPassword = os.Getenv("BQ_SASL_PASSWORD")
	c.envPulsarToken = os.Getenv("BQ_PULSAR_TOKEN")
	fs.StringVar(&c.saslPassword, "sasl-password", "", "SASL password (prefer env BQ_SASL_PASSWORD)")
	fs.StringVar(&c.pulsarToken, "pulsar-token", "", "Pulsar JWT token (prefer env BQ_PULSAR_TOKEN; ignored on Kafka)")
	fs.DurationVar(&c.dialTimeout, "dial-timeout", 10*time.Second, "bound on connecting to the broker")
}

// url parses the broker URL.
func (c *connFlags) url() (brokerURL, error) {
	return parseBrokerURL(c.broker)
}

// check validates the flag combination without connecting, and fills in
// the secrets the environment gives for flags that were not set.
func (c *connFlags) check(u brokerURL) error {
	if c.saslPassword == "" {
		c.saslPassword = c.envSASLPassword
	}
	if c.pulsarToken == "" && u.Kind == kindPulsar {
		c.pulsarToken = c.envPulsarToken
	}
	if c.dialTimeout <= 0 {
		return fmt.Errorf("--dial-timeout %v: must be positive", c.dialTimeout)
	}
	if (c.tlsCert == "") != (c.tlsKey == "") {
		return fmt.Errorf("--tls-cert and --tls-key go together")
	}
	if c.saslMech != "" {
		if u.Kind != kindKafka {
			return fmt.Errorf("--sasl-mechanism applies to Kafka only (Pulsar uses --pulsar-token)")
		}
		switch strings.ToLower(c.saslMech) {
		case "plain", "scram-sha-256", "scram-sha-512":
		default:
			return fmt.Errorf("--sasl-mechanism %q: want plain, scram-sha-256 or scram-sha-512", c.saslMech)
		}
		if strings.TrimSpace(c.saslUser) == "" {
			return fmt.Errorf("--sasl-mechanism %s needs --sasl-user (or BQ_SASL_USER)", c.saslMech)
		}
	}
	if c.pulsarToken != "" && u.Kind != kindPulsar {
		return fmt.Errorf("--pulsar-token applies to Pulsar only")
	}
	return nil
}

// useTLS reports whether connections use TLS.
func (c *connFlags) useTLS(u brokerURL) bool {
	return u.TLS || c.tls || c.tlsCA != "" || c.tlsCert != "" || c.tlsInsecure
}

// tlsConfig builds the TLS configuration, or nil without TLS.
func (c *connFlags) tlsConfig(u brokerURL) (*tls.Config, error) {
	if !c.useTLS(u) {
		return nil, nil
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, InsecureSkipVerify: c.tlsInsecure} //nolint:gosec // opt-in flag
	if c.tlsCA != "" {
		pem, err := os.ReadFile(c.tlsCA)
		if err != nil {
			return nil, fmt.Errorf("--tls-ca: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("--tls-ca %s: no PEM certificate found", c.tlsCA)
		}
		cfg.RootCAs = pool
	}
	if c.tlsCert != "" {
		cert, err := tls.LoadX509KeyPair(c.tlsCert, c.tlsKey)
		if err != nil {
			return nil, fmt.Errorf("--tls-cert/--tls-key: %w", err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	return cfg, nil
}

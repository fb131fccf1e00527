package main

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/pflag"
)

// stdin is where commands read standard input (tests replace it).
var stdin io.Reader = os.Stdin

// Environment variables naming the broker. BQ_KAFKA_BROKERS and
// BQ_PULSAR_URL are what tools/brokers/env.sh and "bq dev kafka" print.
const (
	envKafkaBrokers = "BQ_KAFKA_BROKERS"
	envPulsarURL    = "BQ_PULSAR_URL"
	envPulsarAdmin  = "BQ_PULSAR_ADMIN_URL"
	// envBrokerDeprecated is the single variable of earlier versions,
	// still read last.
	envBrokerDeprecated = "BQ_BROKER"
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
	timeout      time.Duration

	// Secrets from the environment. They are not flag defaults, so --help
	// never prints them; check applies them when the flag is not given.
	// An ambient BQ_PULSAR_TOKEN is ignored on Kafka, where only an explicit
	// --pulsar-token is an error.
	envSASLPassword string
	envPulsarToken  string

	// warn receives a note about a deprecated variable (stderr).
	warn io.Writer
}

// connEnvHelp lists the environment variables of connFlags.
const connEnvHelp = `Broker (--broker/-b wins, then the first variable set):
  BQ_KAFKA_BROKERS     Kafka: host:port[,host:port] (what "bq dev kafka" and
                       tools/brokers/env.sh print); kafka://, kafka+ssl:// also work
  BQ_PULSAR_URL        Pulsar: pulsar://host:port or pulsar+ssl://host:port
  BQ_BROKER            deprecated: any of the above
  --broker takes a URL, a bare host:port[,host:port] (Kafka), or the word
  "kafka" or "pulsar" to pick BQ_KAFKA_BROKERS or BQ_PULSAR_URL when both are set.
  BQ_PULSAR_ADMIN_URL  Pulsar admin REST API (lag, topics), default http://<host>:8080
Security (flags win):
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
func (c *connFlags) register(fs *pflag.FlagSet) {
	fs.StringVarP(&c.broker, "broker", "b", "", `broker: URL, bare host:port (Kafka), or "kafka"/"pulsar" (env BQ_KAFKA_BROKERS, BQ_PULSAR_URL)`)
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
	fs.DurationVar(&c.dialTimeout, "dial-timeout", 10*time.Second, "bound on the first connection: dial, TLS, SASL and the first answer")
	fs.DurationVar(&c.timeout, "timeout", 30*time.Second, "bound on each later broker request")
}

// brokerSpec is the broker the flags and the environment name.
func (c *connFlags) brokerSpec() (string, error) {
	kafkaEnv, pulsarEnv := os.Getenv(envKafkaBrokers), os.Getenv(envPulsarURL)
	switch strings.ToLower(strings.TrimSpace(c.broker)) {
	case "":
	case "kafka":
		if kafkaEnv == "" {
			return "", fmt.Errorf("%w: --broker kafka needs %s", errBadURL, envKafkaBrokers)
		}
		return kafkaEnv, nil
	case "pulsar":
		if pulsarEnv == "" {
			return "", fmt.Errorf("%w: --broker pulsar needs %s", errBadURL, envPulsarURL)
		}
		return pulsarEnv, nil
	default:
		return c.broker, nil
	}
	switch {
	case kafkaEnv != "":
		return kafkaEnv, nil
	case pulsarEnv != "":
		return pulsarEnv, nil
	case os.Getenv(envBrokerDeprecated) != "":
		if c.warn != nil {
			fmt.Fprintf(c.warn, "bq: %s is deprecated; use %s or %s\n", envBrokerDeprecated, envKafkaBrokers, envPulsarURL)
		}
		return os.Getenv(envBrokerDeprecated), nil
	}
	return "", nil
}

// url parses the broker the flags and the environment name.
func (c *connFlags) url() (brokerURL, error) {
	s, err := c.brokerSpec()
	if err != nil {
		return brokerURL{}, err
	}
	return parseBrokerURL(s)
}

// resolve parses and checks the broker and the security flags; every
// problem is a usage error.
func (c *connFlags) resolve(errOut io.Writer) (brokerURL, error) {
	c.warn = errOut
	u, err := c.url()
	if err != nil {
		return u, usagef("%v", err)
	}
	if err := c.check(u); err != nil {
		return u, usagef("%v", err)
	}
	return u, nil
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
	if c.timeout <= 0 {
		return fmt.Errorf("--timeout %v: must be positive", c.timeout)
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

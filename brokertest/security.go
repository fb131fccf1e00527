package brokertest

import (
	"crypto/tls"
	"crypto/x509"
	"os"
	"testing"
)

// Names of the environment variables of the secured listeners, read by
// this package.
const (
	// EnvKafkaTLSBrokers holds the addresses of Kafka's SSL listener.
	EnvKafkaTLSBrokers = "BQ_KAFKA_TLS_BROKERS"
	// EnvKafkaSASLTLSBrokers holds the addresses of Kafka's SASL_SSL
	// listener (SCRAM-SHA-256 and SCRAM-SHA-512 over TLS).
	EnvKafkaSASLTLSBrokers = "BQ_KAFKA_SASL_TLS_BROKERS"
	// EnvKafkaTLSCA names the PEM file of the CA that signed the
	// certificate of Kafka's TLS listeners.
	EnvKafkaTLSCA = "BQ_KAFKA_TLS_CA"
	// EnvPulsarTLSURL holds Pulsar's TLS service URL (pulsar+ssl://).
	EnvPulsarTLSURL = "BQ_PULSAR_TLS_URL"
	// EnvPulsarTLSCA names the PEM file of the CA that signed the
	// certificate of Pulsar's TLS port.
	EnvPulsarTLSCA = "BQ_PULSAR_TLS_CA"
	// EnvPulsarToken holds a JWT the Pulsar broker accepts.
	EnvPulsarToken = "BQ_PULSAR_TOKEN"
)

// KafkaTLS returns the addresses of the Kafka broker's SSL listener and
// the PEM file of the CA that signed its certificate (valid for 127.0.0.1
// and localhost). It skips the test (fails it when CI is set) when a
// variable is missing, and fails it when the addresses are malformed or
// the file holds no PEM certificate.
func KafkaTLS(t testing.TB) (brokers []string, caFile string) {
	t.Helper()
	brokers = addrs(t, EnvKafkaTLSBrokers)
	caFile = caFileOf(t, EnvKafkaTLSCA)
	return brokers, caFile
}

// KafkaSASLTLS returns the addresses of the Kafka broker's SASL_SSL
// listener, the SCRAM credentials accepted there (the same as KafkaSASL's)
// and the PEM file of the CA that signed its certificate. It skips the test
// (fails it when CI is set) when a variable is missing, and fails it when a
// value is malformed.
func KafkaSASLTLS(t testing.TB) (brokers []string, user, password, caFile string) {
	t.Helper()
	brokers = addrs(t, EnvKafkaSASLTLSBrokers)
	user = require(t, EnvKafkaSASLUser)
	password = require(t, EnvKafkaSASLPassword)
	caFile = caFileOf(t, EnvKafkaTLSCA)
	return brokers, user, password, caFile
}

// PulsarTLS returns the Pulsar TLS service URL (pulsar+ssl://host:port)
// and the PEM file of the CA that signed the broker's certificate (valid
// for 127.0.0.1 and localhost). It skips the test (fails it when CI is set)
// when a variable is missing, and fails it when the URL is not a
// pulsar+ssl:// URL with a host and port or the file holds no PEM
// certificate.
func PulsarTLS(t testing.TB) (url, caFile string) {
	t.Helper()
	url = serviceURL(t, EnvPulsarTLSURL, "pulsar+ssl")
	caFile = caFileOf(t, EnvPulsarTLSCA)
	return url, caFile
}

// PulsarToken returns a JWT the Pulsar broker accepts on both its plain
// and TLS ports (the broker also lets clients without a token in, as an
// anonymous role). It skips the test (fails it when CI is set) when
// BQ_PULSAR_TOKEN is missing.
func PulsarToken(t testing.TB) string {
	t.Helper()
	return require(t, EnvPulsarToken)
}

// TLSConfig returns a TLS client configuration that trusts only the CA
// certificates in caFile (TLS 1.2 or later, the server's name verified). It
// fails the test when the file cannot be read or holds no PEM certificate.
func TLSConfig(t testing.TB, caFile string) *tls.Config {
	t.Helper()
	pool, ok := caPool(t, "CA file", caFile)
	if !ok {
		return nil
	}
	return &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
}

// caFileOf returns the file named by the variable after checking it holds
// a PEM certificate.
func caFileOf(t testing.TB, name string) string {
	t.Helper()
	file := require(t, name)
	if _, ok := caPool(t, name, file); !ok {
		return ""
	}
	return file
}

// caPool reads the PEM certificates of file; what names the file in a
// failure message.
func caPool(t testing.TB, what, file string) (*x509.CertPool, bool) {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatalf("brokertest: %s: %v", what, err)
		return nil, false
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(data) {
		t.Fatalf("brokertest: %s=%q holds no PEM certificate", what, file)
		return nil, false
	}
	return pool, true
}

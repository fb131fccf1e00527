package brokertest

import (
	"fmt"
	"net"
	"net/url"
	"os"
	"strings"
	"testing"
)

// Names of the environment variables read by this package.
const (
	EnvKafkaBrokers      = "BQ_KAFKA_BROKERS"
	EnvKafkaSASLBrokers  = "BQ_KAFKA_SASL_BROKERS"
	EnvKafkaSASLUser     = "BQ_KAFKA_SASL_USER"
	EnvKafkaSASLPassword = "BQ_KAFKA_SASL_PASSWORD"
	EnvPulsarURL         = "BQ_PULSAR_URL"
	EnvPulsarAdminURL    = "BQ_PULSAR_ADMIN_URL"
	// EnvCI, when non-empty, turns a missing broker variable from a skip
	// into a failure.
	EnvCI = "CI"
)

// howToStart is appended to every "missing variable" message.
const howToStart = "start the brokers with `make brokers-up` and export the BQ_* lines it prints, " +
	"or run the tests under tools/brokers/with-brokers.sh"

// KafkaBrokers returns the PLAINTEXT listener addresses of the Kafka broker
// (host:port each, at least one). It skips the test (fails it when CI is
// set) when BQ_KAFKA_BROKERS is missing, and fails it when the value is not
// a list of host:port.
func KafkaBrokers(t testing.TB) []string {
	t.Helper()
	return addrs(t, EnvKafkaBrokers)
}

// KafkaSASL returns the SASL_PLAINTEXT listener addresses of the Kafka
// broker and the SCRAM credentials accepted there (valid for both
// SCRAM-SHA-256 and SCRAM-SHA-512). It skips the test (fails it when CI is
// set) when one of the variables is missing, and fails it when the address
// list is malformed.
func KafkaSASL(t testing.TB) (brokers []string, user, password string) {
	t.Helper()
	brokers = addrs(t, EnvKafkaSASLBrokers)
	user = require(t, EnvKafkaSASLUser)
	password = require(t, EnvKafkaSASLPassword)
	return brokers, user, password
}

// PulsarURL returns the Pulsar binary protocol service URL
// (pulsar://host:port). It skips the test (fails it when CI is set) when
// BQ_PULSAR_URL is missing, and fails it when the value is not a pulsar://
// URL with a host and port.
func PulsarURL(t testing.TB) string {
	t.Helper()
	return serviceURL(t, EnvPulsarURL, "pulsar")
}

// PulsarAdminURL returns the Pulsar admin (web service) base URL
// (http://host:port, no trailing slash). It skips the test (fails it when CI
// is set) when BQ_PULSAR_ADMIN_URL is missing, and fails it when the value
// is not an http:// or https:// URL with a host and port.
func PulsarAdminURL(t testing.TB) string {
	t.Helper()
	return strings.TrimSuffix(serviceURL(t, EnvPulsarAdminURL, "http", "https"), "/")
}

// require returns the trimmed value of the variable, or ends the test: a
// skip normally, a failure when CI is set.
func require(t testing.TB, name string) string {
	t.Helper()
	v := strings.TrimSpace(os.Getenv(name))
	if v != "" {
		return v
	}
	msg := fmt.Sprintf("brokertest: %s is not set; %s", name, howToStart)
	if os.Getenv(EnvCI) != "" {
		t.Fatalf("%s (failing instead of skipping because %s is set)", msg, EnvCI)
	} else {
		t.Skipf("%s", msg)
	}
	return ""
}

// addrs parses a comma-separated host:port list.
func addrs(t testing.TB, name string) []string {
	t.Helper()
	raw := require(t, name)
	var out []string
	for _, a := range strings.Split(raw, ",") {
		a = strings.TrimSpace(a)
		if a == "" {
			continue
		}
		host, port, err := net.SplitHostPort(a)
		if err != nil || host == "" || port == "" {
			t.Fatalf("brokertest: %s=%q: %q is not host:port", name, raw, a)
			return nil
		}
		out = append(out, a)
	}
	if len(out) == 0 {
		t.Fatalf("brokertest: %s=%q holds no address", name, raw)
	}
	return out
}

// serviceURL checks that the variable holds a URL with one of the schemes
// and an explicit host:port.
func serviceURL(t testing.TB, name string, schemes ...string) string {
	t.Helper()
	raw := require(t, name)
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatalf("brokertest: %s=%q: %v", name, raw, err)
		return ""
	}
	ok := false
	for _, s := range schemes {
		ok = ok || u.Scheme == s
	}
	if !ok || u.Hostname() == "" || u.Port() == "" {
		t.Fatalf("brokertest: %s=%q: want %s://host:port", name, raw, strings.Join(schemes, "|"))
		return ""
	}
	return raw
}

package pulsar

import (
	"errors"
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/apache/pulsar-client-go/pulsar"

	babelqueue "github.com/babelqueue/babelqueue-go/core"
)

// TestWithServiceURLNormalizesGoodURLs: the URLs the client accepts with
// explicit ports reach it with a lower-case scheme and ',' between hosts.
func TestWithServiceURLNormalizesGoodURLs(t *testing.T) {
	for in, want := range map[string]string{
		"pulsar://127.0.0.1:6650":                 "pulsar://127.0.0.1:6650",
		" pulsar://127.0.0.1:6650/ ":              "pulsar://127.0.0.1:6650",
		"PULSAR+SSL://broker-1:6651":              "pulsar+ssl://broker-1:6651",
		"pulsar://127.0.0.1:6650,127.0.0.1:6660":  "pulsar://127.0.0.1:6650,127.0.0.1:6660",
		"pulsar://127.0.0.1:6650; 127.0.0.1:6660": "pulsar://127.0.0.1:6650,127.0.0.1:6660",
		"pulsar://[::1]:6650":                     "pulsar://[::1]:6650",
		"http://127.0.0.1:8080":                   "http://127.0.0.1:8080",
		"https://pulsar.example:8443":             "https://pulsar.example:8443",
	} {
		var c config
		WithServiceURL(in)(&c)
		if len(c.errs) != 0 || c.serviceURL != want {
			t.Errorf("WithServiceURL(%q) = %q, %v; want %q", in, c.serviceURL, c.errs, want)
		}
		cl, err := pulsar.NewClient(pulsar.ClientOptions{URL: c.serviceURL, Logger: newFailureLogger(slog.New(slog.NewTextHandler(io.Discard, nil)), &connFailures{})})
		if err != nil {
			t.Errorf("the client rejects %q: %v", c.serviceURL, err)
			continue
		}
		cl.Close()
	}
}

// TestNewRejectsBadServiceURLs: New reports a bad service URL with the
// problems of the other options, not as "one of WithServiceURL or
// WithClient is required", and never builds a client for it.
func TestNewRejectsBadServiceURLs(t *testing.T) {
	for in, want := range map[string]string{
		" ":                              "service URL is blank",
		"127.0.0.1:6650":                 "has no scheme",
		"kafka://127.0.0.1:9092":         `scheme "kafka" is not one of`,
		"pulsar+tls://127.0.0.1:6651":    `scheme "pulsar+tls"`,
		"pulsar://127.0.0.1":             `"127.0.0.1" is not host:port`,
		"pulsar://127.0.0.1:66500":       `port "66500"`,
		"pulsar://127.0.0.1:abc":         `port "abc"`,
		"pulsar://127.0.0.1:6650,":       "separated by ','",
		"pulsar://":                      "separated by ','",
		"pulsar://u:p@127.0.0.1:6650":    "no path, query or credentials",
		"pulsar://127.0.0.1:6650/public": "no path, query or credentials",
		"pulsar://fec0::1:6650":          "is not host:port",
	} {
		_, err := New(WithServiceURL(in), WithSubscription(" "))
		if !errors.Is(err, babelqueue.ErrInvalidOption) {
			t.Errorf("WithServiceURL(%q): New = %v, want ErrInvalidOption", in, err)
			continue
		}
		msg := err.Error()
		if !strings.Contains(msg, want) || !strings.Contains(msg, "subscription") || strings.Contains(msg, "is required") {
			t.Errorf("WithServiceURL(%q): New = %q, want %q and the subscription problem only", in, msg, want)
		}
	}
}

// FuzzParseServiceURL: parseServiceURL never panics, and what it returns
// parses again to itself.
func FuzzParseServiceURL(f *testing.F) {
	for _, s := range []string{"pulsar://127.0.0.1:6650", "pulsar+ssl://a:1;b:2", "pulsar://", "127.0.0.1:6650", "http://[::1]:80/"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		u, err := parseServiceURL(s)
		if err != nil {
			return
		}
		again, err := parseServiceURL(u)
		if err != nil || again != u {
			t.Fatalf("%q -> %q -> %q, %v", s, u, again, err)
		}
	})
}

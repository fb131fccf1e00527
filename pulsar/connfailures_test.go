package pulsar

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"testing"

	plog "github.com/apache/pulsar-client-go/pulsar/log"
)

func TestConnFailuresExplainTheLastFailedConnection(t *testing.T) {
	var out bytes.Buffer
	f := &connFailures{}
	l := newFailureLogger(slog.New(slog.NewTextHandler(&out, nil)), f)
	conn := l.SubLogger(plog.Fields{"remote_addr": "pulsar+ssl://127.0.0.1:6651"})
	base := errors.New("connection error")

	if got := f.explain(base); got != base {
		t.Fatalf("nothing failed yet, explain = %v", got)
	}
	conn.WithError(errors.New("x509: certificate signed by unknown authority")).Warn("Failed to connect to broker.")
	got := f.explain(base)
	want := "connection error (last broker connection failure: pulsar+ssl://127.0.0.1:6651: Failed to connect to broker: x509: certificate signed by unknown authority)"
	if got.Error() != want || !errors.Is(got, base) {
		t.Fatalf("explain = %q (errors.Is %t), want %q", got, errors.Is(got, base), want)
	}
	if !strings.Contains(out.String(), "Failed to connect to broker") || !strings.Contains(out.String(), "unknown authority") {
		t.Errorf("the inner logger did not get the warning: %q", out.String())
	}

	conn.SubLogger(plog.Fields{"local_addr": "127.0.0.1:5000"}).Warnf("Failed to establish connection with broker: '%s'", "Failed to authenticate")
	if got := f.explain(base).Error(); !strings.HasSuffix(got, "pulsar+ssl://127.0.0.1:6651: Failed to establish connection with broker: 'Failed to authenticate')") {
		t.Fatalf("latest failure not reported: %q", got)
	}

	// Unrelated warnings do not replace the reason; a ready connection clears it.
	l.Warn("Producer is closing")
	if got := f.explain(base).Error(); !strings.Contains(got, "Failed to authenticate") {
		t.Fatalf("an unrelated warning replaced the reason: %q", got)
	}
	conn.Info("Connection is ready")
	if got := f.explain(base); got != base {
		t.Fatalf("after a ready connection explain = %v, want the error unchanged", got)
	}

	var none *connFailures
	if got := none.explain(base); got != base {
		t.Fatalf("a given client's error changed: %v", got)
	}
}

func TestClientOptionsLogThroughTheTransportLogger(t *testing.T) {
	var out bytes.Buffer
	cfg := defaultConfig()
	for _, o := range []Option{WithServiceURL("pulsar://127.0.0.1:6650"), WithLogger(slog.New(slog.NewTextHandler(&out, nil)))} {
		if o(&cfg); len(cfg.errs) > 0 {
			t.Fatal(cfg.errs)
		}
	}
	co := cfg.clientOptions()
	if co.Logger == nil || cfg.failures == nil {
		t.Fatalf("client logger %v, failures %v", co.Logger, cfg.failures)
	}
	co.Logger.WithField("topic", "q").Info("Created producer")
	if !strings.Contains(out.String(), "Created producer") {
		t.Errorf("client log line not written to the Transport's logger: %q", out.String())
	}
}

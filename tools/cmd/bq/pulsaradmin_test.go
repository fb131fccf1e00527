package main

import (
	"bytes"
	"context"
	"crypto/x509"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// fakePulsarAdmin serves the admin REST paths bq reads.
func fakePulsarAdmin(t *testing.T) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer tok" {
			http.Error(w, "no", http.StatusUnauthorized)
			return
		}
		switch r.URL.Path {
		case "/admin/v2/persistent/public/default":
			_ = json.NewEncoder(w).Encode([]string{
				"persistent://public/default/orders-partition-0", "persistent://public/default/orders-partition-1",
				"persistent://public/default/orders.dlq", "persistent://public/default/orders.dlq.bq-redrive.journal"})
		case "/admin/v2/persistent/public/default/orders/partitions":
			_, _ = w.Write([]byte(`{"partitions":2}`))
		case "/admin/v2/persistent/public/default/orders/partitioned-stats":
			_, _ = w.Write([]byte(`{"msgInCounter":12,"subscriptions":{"workers":{"msgBacklog":5,"type":"Shared","consumers":[{},{}]},"audit":{"msgBacklog":0,"type":"Exclusive","consumers":[]}}}`))
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestPulsarAdminCommands(t *testing.T) {
	clearBrokerEnv(t)
	srv := fakePulsarAdmin(t)
	t.Setenv(envPulsarAdmin, srv.URL)
	t.Setenv("BQ_PULSAR_TOKEN", "tok")
	runBQ := func(args ...string) (int, string, string) {
		var out, errOut bytes.Buffer
		code := run(context.Background(), append(args, "-b", "pulsar://127.0.0.1:1", "--timeout", "5s"), &out, &errOut)
		return code, out.String(), errOut.String()
	}
	code, out, errOut := runBQ("lag", "-t", "orders", "--json")
	var rows []lagRow
	if code != exitOK || json.Unmarshal([]byte(out), &rows) != nil || len(rows) != 2 || rows[1].Subscription != "workers" || rows[1].Lag != 5 {
		t.Fatalf("lag: exit %d %s %s", code, out, errOut)
	}
	if code, out, _ = runBQ("lag", "-t", "orders", "-g", "workers"); code != exitOK || !strings.Contains(out, "workers") || strings.Contains(out, "audit") {
		t.Errorf("lag of one subscription:\n%s", out)
	}
	code, out, errOut = runBQ("topics", "list", "--json")
	var topics []topicRow
	if code != exitOK || json.Unmarshal([]byte(out), &topics) != nil || len(topics) != 3 || topics[0].Topic != "orders" || topics[0].Partitions != 2 || topics[2].Kind != "journal" {
		t.Fatalf("topics list: exit %d %s %s", code, out, errOut)
	}
	code, out, errOut = runBQ("topics", "describe", "-t", "orders")
	if code != exitOK || !strings.Contains(out, "SUBSCRIPTION") || !strings.Contains(out, "2 partitions") {
		t.Errorf("describe: exit %d\n%s%s", code, out, errOut)
	}
	if code, _, errOut = runBQ("topics", "describe", "-t", "missing"); code != exitError || !strings.Contains(errOut, "not found") {
		t.Errorf("describe missing: exit %d %s", code, errOut)
	}
	t.Setenv("BQ_PULSAR_TOKEN", "bad")
	if code, _, errOut = runBQ("lag", "-t", "orders"); code != exitError || !strings.Contains(errOut, "rejected") {
		t.Errorf("refused token: exit %d %s", code, errOut)
	}
}

func TestPulsarCause(t *testing.T) {
	cases := map[string]error{
		"certificate is not accepted": x509.UnknownAuthorityError{},
		"does not speak TLS":          errors.New("tls: first record does not look like a TLS handshake"),
		"refuses the credentials":     errors.New("server error: AuthenticationError: Failed to authenticate"),
		"":                            errors.New("connection refused"),
	}
	for want, err := range cases {
		got := pulsarCause(err)
		if want == "" && got != "" || want != "" && !strings.Contains(got, want) {
			t.Errorf("pulsarCause(%v) = %q, want %q", err, got, want)
		}
	}
}

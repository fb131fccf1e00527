package orderstatus

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func env(vars map[string]string) func(string) string {
	return func(k string) string { return vars[k] }
}

func TestSettingsFromEnvDefaults(t *testing.T) {
	got, err := SettingsFromEnv(env(map[string]string{EnvBrokers: "127.0.0.1:9092, 127.0.0.1:9093"}))
	if err != nil {
		t.Fatal(err)
	}
	want := Settings{
		Brokers:     []string{"127.0.0.1:9092", "127.0.0.1:9093"},
		EventsTopic: "orders.events", RetryTopic: "orders.retry", DeadLetterTopic: "orders.dlq",
		GroupID: "orderstatus", StorePath: "orderstatus.db",
		Attempts: 5, MinDelay: time.Second, MaxDelay: time.Minute,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("settings (-want +got):\n%s", diff)
	}
}

func TestSettingsFromEnvReportsEveryProblem(t *testing.T) {
	_, err := SettingsFromEnv(env(map[string]string{
		EnvRetryTopic: "orders.events", EnvRetryAttempts: "three", EnvRetryMinDelay: "500ms", EnvRetryMaxDelay: "100ms",
	}))
	if !errors.Is(err, ErrInvalidSettings) {
		t.Fatalf("err = %v, want ErrInvalidSettings", err)
	}
	for _, sub := range []string{"KAFKA_BROKERS is not set", `RETRY_ATTEMPTS "three"`, "must differ", "RETRY_MAX_DELAY (100ms) is less than RETRY_MIN_DELAY (500ms)"} {
		if !strings.Contains(err.Error(), sub) {
			t.Errorf("error %q does not say %q", err, sub)
		}
	}
	_, err = SettingsFromEnv(env(map[string]string{EnvBrokers: "nohost", EnvRetryAttempts: "0", EnvRetryMinDelay: "soon"}))
	for _, sub := range []string{`"nohost" is not host:port`, "RETRY_ATTEMPTS is 0", `RETRY_MIN_DELAY "soon"`} {
		if err == nil || !strings.Contains(err.Error(), sub) {
			t.Errorf("error %v does not say %q", err, sub)
		}
	}
}

func TestTransition(t *testing.T) {
	allowed := map[[2]Status]bool{
		{StatusNone, StatusCreated}: true, {StatusCreated, StatusPaid}: true, {StatusCreated, StatusCancelled}: true,
		{StatusPaid, StatusShipped}: true, {StatusPaid, StatusCancelled}: true, {StatusShipped, StatusDelivered}: true,
	}
	all := []Status{StatusNone, StatusCreated, StatusPaid, StatusShipped, StatusDelivered, StatusCancelled}
	for _, from := range all {
		for _, to := range all[1:] {
			same, err := Transition(from, to)
			switch {
			case from == to:
				if !same || err != nil {
					t.Errorf("Transition(%q, %q) = %v, %v; want applied already", from, to, same, err)
				}
			case allowed[[2]Status{from, to}]:
				if same || err != nil {
					t.Errorf("Transition(%q, %q) = %v, %v; want allowed", from, to, same, err)
				}
			default:
				if !errors.Is(err, ErrInvalidTransition) {
					t.Errorf("Transition(%q, %q) = %v, %v; want ErrInvalidTransition", from, to, same, err)
				}
			}
		}
	}
}

func TestDecodeEvent(t *testing.T) {
	e, reason, err := DecodeEvent(envelope(t, URNShipped, map[string]any{"order_id": "A-1"}))
	if err != nil || reason != "" || e.OrderID != "A-1" || e.Status != StatusShipped || e.ID == "" {
		t.Errorf("DecodeEvent = %+v, %q, %v", e, reason, err)
	}
	e, _, err = DecodeEvent(envelope(t, URNPaid, map[string]any{"order_id": 1042}))
	if err != nil || e.OrderID != "1042" {
		t.Errorf("integer order id: %+v, %v", e, err)
	}
	for name, value := range map[string][]byte{
		"not json":       []byte("nope"),
		"schema 2":       []byte(`{"job":"urn:babel:orders:paid","trace_id":"t","data":{"order_id":1},"meta":{"id":"x","schema_version":2},"attempts":0}`),
		"blank id":       []byte(`{"job":"urn:babel:orders:paid","trace_id":"t","data":{"order_id":1},"meta":{"id":" ","schema_version":1},"attempts":0}`),
		"no order id":    envelope(t, URNPaid, map[string]any{}),
		"blank order id": envelope(t, URNPaid, map[string]any{"order_id": " "}),
		"float order id": envelope(t, URNPaid, map[string]any{"order_id": 1.5}),
	} {
		if _, reason, err := DecodeEvent(value); reason != ReasonMalformed || !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: reason %q, err %v; want malformed", name, reason, err)
		}
	}
	if _, reason, err := DecodeEvent(envelope(t, "urn:babel:orders:refunded", map[string]any{"order_id": 1})); reason != ReasonUnknownType || !errors.Is(err, ErrUnknownType) {
		t.Errorf("unknown urn: reason %q, err %v", reason, err)
	}
}

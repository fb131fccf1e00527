package brokertest

import (
	"reflect"
	"strings"
	"testing"
)

func TestKafkaBrokers(t *testing.T) {
	t.Setenv(EnvKafkaBrokers, " 127.0.0.1:19092, 127.0.0.2:19092 ,")
	var got []string
	f := run("T", func(tb testing.TB) { got = KafkaBrokers(tb) })
	if f.ended() {
		t.Fatalf("ended the test: fatal=%q skip=%q", f.fatal, f.skip)
	}
	want := []string{"127.0.0.1:19092", "127.0.0.2:19092"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("KafkaBrokers = %q, want %q", got, want)
	}
}

func TestMissingSkipsOutsideCI(t *testing.T) {
	t.Setenv(EnvCI, "")
	t.Setenv(EnvKafkaBrokers, "")
	reached := false
	f := run("T", func(tb testing.TB) { KafkaBrokers(tb); reached = true })
	if f.skip == "" || f.fatal != "" {
		t.Fatalf("want a skip, got fatal=%q skip=%q", f.fatal, f.skip)
	}
	if reached {
		t.Fatal("code after the helper ran although the test was skipped")
	}
	for _, want := range []string{EnvKafkaBrokers, "make brokers-up", "with-brokers.sh"} {
		if !strings.Contains(f.skip, want) {
			t.Errorf("skip message %q does not mention %q", f.skip, want)
		}
	}
}

func TestMissingFailsInCI(t *testing.T) {
	t.Setenv(EnvCI, "true")
	cases := map[string]missingCase{
		"kafka":       {EnvKafkaBrokers, func(tb testing.TB) { KafkaBrokers(tb) }},
		"sasl-broker": {EnvKafkaSASLBrokers, func(tb testing.TB) { KafkaSASL(tb) }},
		"sasl-user":   {EnvKafkaSASLUser, func(tb testing.TB) { KafkaSASL(tb) }},
		"sasl-pass":   {EnvKafkaSASLPassword, func(tb testing.TB) { KafkaSASL(tb) }},
		"pulsar":      {EnvPulsarURL, func(tb testing.TB) { PulsarURL(tb) }},
		"admin":       {EnvPulsarAdminURL, func(tb testing.TB) { PulsarAdminURL(tb) }},
	}
	checkMissingFailsInCI(t, setAll, "   ", cases)
}

func TestAllSet(t *testing.T) {
	setAll(t)
	var brokers []string
	var user, pass, purl, admin string
	f := run("T", func(tb testing.TB) {
		brokers, user, pass = KafkaSASL(tb)
		purl = PulsarURL(tb)
		admin = PulsarAdminURL(tb)
	})
	if f.ended() {
		t.Fatalf("ended the test: fatal=%q skip=%q", f.fatal, f.skip)
	}
	if !reflect.DeepEqual(brokers, []string{"127.0.0.1:19093"}) || user != "bq" || pass != "pw" {
		t.Errorf("KafkaSASL = %q, %q, %q", brokers, user, pass)
	}
	if purl != "pulsar://127.0.0.1:16650" {
		t.Errorf("PulsarURL = %q", purl)
	}
	if admin != "http://127.0.0.1:18080" {
		t.Errorf("PulsarAdminURL = %q (trailing slash must be dropped)", admin)
	}
}

func TestMalformedFailsEvenOutsideCI(t *testing.T) {
	t.Setenv(EnvCI, "")
	cases := map[string]struct {
		env, value string
		call       func(testing.TB)
	}{
		"kafka no port":     {EnvKafkaBrokers, "127.0.0.1", func(tb testing.TB) { KafkaBrokers(tb) }},
		"kafka only commas": {EnvKafkaBrokers, ",,", func(tb testing.TB) { KafkaBrokers(tb) }},
		"pulsar scheme":     {EnvPulsarURL, "http://127.0.0.1:16650", func(tb testing.TB) { PulsarURL(tb) }},
		"pulsar no port":    {EnvPulsarURL, "pulsar://127.0.0.1", func(tb testing.TB) { PulsarURL(tb) }},
		"admin scheme":      {EnvPulsarAdminURL, "pulsar://127.0.0.1:18080", func(tb testing.TB) { PulsarAdminURL(tb) }},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			t.Setenv(c.env, c.value)
			f := run("T", c.call)
			if f.fatal == "" || f.skip != "" {
				t.Fatalf("want a failure, got fatal=%q skip=%q", f.fatal, f.skip)
			}
			if !strings.Contains(f.fatal, c.env) {
				t.Errorf("message %q should name %s", f.fatal, c.env)
			}
		})
	}
}

func setAll(t *testing.T) {
	t.Helper()
	t.Setenv(EnvKafkaBrokers, "127.0.0.1:19092")
	t.Setenv(EnvKafkaSASLBrokers, "127.0.0.1:19093")
	t.Setenv(EnvKafkaSASLUser, "bq")
	t.Setenv(EnvKafkaSASLPassword, "pw")
	t.Setenv(EnvPulsarURL, "pulsar://127.0.0.1:16650")
	t.Setenv(EnvPulsarAdminURL, "http://127.0.0.1:18080/")
}

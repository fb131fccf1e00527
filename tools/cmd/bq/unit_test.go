package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/babelqueue/babelqueue-go/brokertest/devkafka"
	babelqueue "github.com/babelqueue/babelqueue-go/core"
	"github.com/babelqueue/babelqueue-go/core/redrive"
	"github.com/babelqueue/babelqueue-go/core/wire"
)

func TestParseBrokerURL(t *testing.T) {
	good := []struct {
		in   string
		want brokerURL
	}{
		{"kafka://127.0.0.1:9092", brokerURL{Kind: kindKafka, Hosts: []string{"127.0.0.1:9092"}}},
		{"kafka://a:1,b:2", brokerURL{Kind: kindKafka, Hosts: []string{"a:1", "b:2"}}},
		{"KAFKA+SSL://a:9093/", brokerURL{Kind: kindKafka, Hosts: []string{"a:9093"}, TLS: true}},
		{"pulsar://127.0.0.1:6650", brokerURL{Kind: kindPulsar, Hosts: []string{"127.0.0.1:6650"}}},
		{"pulsar+ssl://[::1]:6651", brokerURL{Kind: kindPulsar, Hosts: []string{"[::1]:6651"}, TLS: true}},
		{"127.0.0.1:9092", brokerURL{Kind: kindKafka, Hosts: []string{"127.0.0.1:9092"}}},
		{"a:1,b:2", brokerURL{Kind: kindKafka, Hosts: []string{"a:1", "b:2"}}},
	}
	for _, c := range good {
		got, err := parseBrokerURL(c.in)
		if err != nil {
			t.Errorf("parseBrokerURL(%q): %v", c.in, err)
			continue
		}
		if diff := cmp.Diff(c.want, got); diff != "" {
			t.Errorf("parseBrokerURL(%q) (-want +got):\n%s", c.in, diff)
		}
	}
	bad := map[string]string{
		"":                       "none given",
		"127.0.0.1":              "want host:port",
		"amqp://a:1":             "unknown scheme",
		"kafka://a":              "want host:port",
		"kafka://a:0":            "1-65535",
		"kafka://a:99999":        "1-65535",
		"kafka://a:x":            "1-65535",
		"kafka://:9092":          "no host name",
		"kafka://u:p@a:1":        "no path, query or credentials",
		"pulsar://a:1/tenant/ns": "no path",
		"kafka://a:1,":           "want host:port",
	}
	for in, want := range bad {
		_, err := parseBrokerURL(in)
		if err == nil || !errors.Is(err, errBadURL) || !strings.Contains(err.Error(), want) {
			t.Errorf("parseBrokerURL(%q) = %v, want errBadURL mentioning %q", in, err, want)
		}
	}
	if got := (brokerURL{Kind: kindPulsar, Hosts: []string{"a:1", "b:2"}, TLS: true}).pulsarServiceURL(); got != "pulsar+ssl://a:1,b:2" {
		t.Errorf("pulsarServiceURL = %q", got)
	}
}

func TestConnFlagsCheck(t *testing.T) {
	k := brokerURL{Kind: kindKafka, Hosts: []string{"a:1"}}
	p := brokerURL{Kind: kindPulsar, Hosts: []string{"a:1"}}
	cases := []struct {
		name string
		c    connFlags
		u    brokerURL
		want string
	}{
		{"ok", connFlags{dialTimeout: time.Second, timeout: time.Second}, k, ""},
		{"scram ok", connFlags{dialTimeout: time.Second, timeout: time.Second, saslMech: "SCRAM-SHA-512", saslUser: "u"}, k, ""},
		{"zero timeout", connFlags{}, k, "--dial-timeout"},
		{"zero request timeout", connFlags{dialTimeout: time.Second}, k, "--timeout"},
		{"cert without key", connFlags{dialTimeout: time.Second, timeout: time.Second, tlsCert: "c"}, k, "go together"},
		{"bad mechanism", connFlags{dialTimeout: time.Second, timeout: time.Second, saslMech: "gssapi", saslUser: "u"}, k, "want plain"},
		{"no user", connFlags{dialTimeout: time.Second, timeout: time.Second, saslMech: "plain"}, k, "needs --sasl-user"},
		{"sasl on pulsar", connFlags{dialTimeout: time.Second, timeout: time.Second, saslMech: "plain", saslUser: "u"}, p, "Kafka only"},
		{"token on kafka", connFlags{dialTimeout: time.Second, timeout: time.Second, pulsarToken: "t"}, k, "Pulsar only"},
	}
	for _, c := range cases {
		err := c.c.check(c.u)
		if c.want == "" {
			if err != nil {
				t.Errorf("%s: %v", c.name, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one mentioning %q", c.name, err, c.want)
		}
	}
	if cfg, err := (&connFlags{}).tlsConfig(k); cfg != nil || err != nil {
		t.Errorf("tlsConfig without TLS = %v, %v; want nil, nil", cfg, err)
	}
	if cfg, err := (&connFlags{}).tlsConfig(brokerURL{Kind: kindKafka, TLS: true}); cfg == nil || err != nil {
		t.Errorf("tlsConfig of kafka+ssl = %v, %v; want a config", cfg, err)
	}
	if _, err := (&connFlags{tlsCA: "/nonexistent/ca.pem"}).tlsConfig(k); err == nil {
		t.Error("tlsConfig with a missing CA file succeeded")
	}
}

func deadLetterBody(t *testing.T, urn, queue, reason string, failedAt time.Time) []byte {
	t.Helper()
	env, err := babelqueue.Make(urn, map[string]int{"n": 1}, babelqueue.WithQueue(queue))
	if err != nil {
		t.Fatal(err)
	}
	body, err := env.Encode()
	if err != nil {
		t.Fatal(err)
	}
	out, err := wire.AnnotateDeadLetter(body, wire.DeadLetter{Reason: reason, FailedAt: failedAt.UnixMilli(), OriginalQueue: queue, Attempts: 3})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestSelector(t *testing.T) {
	now := time.Date(2026, 1, 2, 12, 0, 0, 0, time.UTC)
	rec := func(urn, reason string, at time.Time) *record {
		return &record{Value: deadLetterBody(t, urn, "q", reason, at), Time: now}
	}
	a := rec("urn:a", wire.ReasonFailed, now.Add(-2*time.Hour))
	b := rec("urn:b", wire.ReasonPoison, now.Add(-10*time.Minute))
	raw := &record{Value: []byte("not json"), Time: now.Add(-time.Minute)}
	cases := []struct {
		flags selectorFlags
		want  []bool // a, b, raw
	}{
		{selectorFlags{}, []bool{true, true, true}},
		{selectorFlags{urns: "urn:a"}, []bool{true, false, false}},
		{selectorFlags{urns: "urn:a, urn:b"}, []bool{true, true, false}},
		{selectorFlags{reasons: "poison"}, []bool{false, true, false}},
		{selectorFlags{reasons: "none"}, []bool{false, false, true}},
		{selectorFlags{since: "1h"}, []bool{false, true, true}},
		{selectorFlags{until: "1h"}, []bool{true, false, false}},
		{selectorFlags{since: "2026-01-02T09:00:00Z", until: "2026-01-02T11:00:00Z"}, []bool{true, false, false}},
	}
	for _, c := range cases {
		sel, err := c.flags.buildAt(now)
		if err != nil {
			t.Fatalf("%+v: %v", c.flags, err)
		}
		got := []bool{sel.matchRecord(a), sel.matchRecord(b), sel.matchRecord(raw)}
		if diff := cmp.Diff(c.want, got); diff != "" {
			t.Errorf("%+v (-want +got):\n%s", c.flags, diff)
		}
	}
	for _, f := range []selectorFlags{{reasons: "oops"}, {since: "yesterday"}, {since: "-1h"}, {since: "1h", until: "2h"}} {
		if _, err := f.buildAt(now); err == nil {
			t.Errorf("%+v: no error", f)
		}
	}
}

func TestAgeBucket(t *testing.T) {
	cases := map[time.Duration]string{0: "<1m", 59 * time.Second: "<1m", time.Minute: "1m-1h", 3 * time.Hour: "1h-1d",
		48 * time.Hour: "1d-7d", 8 * 24 * time.Hour: ">=7d"}
	for d, want := range cases {
		if got := ageBucket(d); got != want {
			t.Errorf("ageBucket(%v) = %q, want %q", d, got, want)
		}
	}
}

func TestDLQStatsCounts(t *testing.T) {
	now := time.Now()
	st := newDLQStats("q.dlq")
	st.add(&record{Value: deadLetterBody(t, "urn:a", "q", "failed", now.Add(-30*time.Second)), Time: now}, now)
	st.add(&record{Value: deadLetterBody(t, "urn:a", "q", "unknown_urn", now.Add(-2*time.Hour)), Time: now}, now)
	st.add(&record{Value: []byte{0xff}, Time: now.Add(-10 * 24 * time.Hour), Headers: []wire.Header{{Key: "bq-job", Value: "urn:x"}}}, now)
	want := &dlqStats{Topic: "q.dlq", Total: 3, Undecodable: 1,
		ByReason:      map[string]int{"failed": 1, "unknown_urn": 1, "(none)": 1},
		ByURN:         map[string]int{"urn:a": 2, "urn:x (undecodable)": 1},
		ByOriginQueue: map[string]int{"q": 2, "(unknown)": 1},
		ByAge:         map[string]int{"<1m": 1, "1h-1d": 1, ">=7d": 1}}
	if diff := cmp.Diff(want, st); diff != "" {
		t.Errorf("stats (-want +got):\n%s", diff)
	}
	var buf bytes.Buffer
	if err := st.write(&buf); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"q.dlq: 3 dead letters (1 undecodable)", "urn:a", "2", "unknown_urn", ">=7d"} {
		if !strings.Contains(buf.String(), s) {
			t.Errorf("table lacks %q:\n%s", s, buf.String())
		}
	}
}

func TestRecordView(t *testing.T) {
	body := deadLetterBody(t, "urn:a", "q", "failed", time.UnixMilli(1000))
	r := &record{Topic: "q.dlq", Partition: 1, Offset: 7, Key: []byte("k"), Value: body, Headers: []wire.Header{{Key: "bq-job", Value: "urn:a"}}}
	v := r.view()
	if v.URN != "urn:a" || v.DeadLetter == nil || v.DeadLetter.Reason != "failed" || v.DeadLetter.OriginalQueue != "q" || *v.Offset != 7 || v.Key != "k" {
		t.Fatalf("view = %+v", v)
	}
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var back map[string]any
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	env := back["envelope"].(map[string]any)
	if env["job"] != "urn:a" || back["dead_letter"].(map[string]any)["failed_at"].(float64) != 1000 {
		t.Errorf("json view = %s", b)
	}
	bin := (&record{Value: []byte{0xff, 0x00}, Key: []byte{0xfe}}).view()
	if bin.BodyBase64 != "/wA=" || bin.Key != "base64:/g==" || bin.DecodeError == "" || bin.Envelope != nil {
		t.Errorf("binary view = %+v", bin)
	}
}

func TestParseTiers(t *testing.T) {
	got, err := parseTiers("1s, 30s,5m")
	if err != nil || !cmp.Equal(got, []time.Duration{time.Second, 30 * time.Second, 5 * time.Minute}) {
		t.Errorf("parseTiers = %v, %v", got, err)
	}
	if got, err := parseTiers("none"); got != nil || err != nil {
		t.Errorf("parseTiers(none) = %v, %v", got, err)
	}
	if got, err := parseTiers("recommended"); err != nil || len(got) != 4 {
		t.Errorf("parseTiers(recommended) = %v, %v", got, err)
	}
	for _, s := range []string{"5s,1s", "x", "0s", "1s,1s"} {
		if _, err := parseTiers(s); err == nil {
			t.Errorf("parseTiers(%q): no error", s)
		}
	}
}

func TestCommandErrorsAndExitCodes(t *testing.T) {
	clearBrokerEnv(t)
	k := "127.0.0.1:1"
	cases := []struct {
		args     []string
		code     int
		contains string
	}{
		{[]string{"help"}, exitOK, "Exit codes"},
		{[]string{"--help"}, exitOK, "Exit codes"},
		{[]string{"publish", "-h"}, exitOK, "Examples:"},
		{[]string{"redrive", "-h"}, exitOK, "nothing is lost"},
		{[]string{"dlq", "peek", "-h"}, exitOK, "Examples:"},
		{[]string{"dlq", "stats", "-h"}, exitOK, "Examples:"},
		{[]string{"dlq", "discard", "-h"}, exitOK, "record file"},
		{[]string{"topics", "ensure", "-h"}, exitOK, "Examples:"},
		{[]string{"topics", "list", "-h"}, exitOK, "Examples:"},
		{[]string{"topics", "describe", "-h"}, exitOK, "retry tiers"},
		{[]string{"lag", "-h"}, exitOK, "committed offset"},
		{[]string{"reinject", "-h"}, exitOK, "/metrics"},
		{[]string{"tail", "-h"}, exitOK, "Examples:"},
		{[]string{"publish", "--queue", "q", "--urn", "urn:a:b"}, exitUsage, "none given (set --broker"},
		{[]string{"publish", "--broker", "kafka://h", "--queue", "q", "--urn", "urn:a:b"}, exitUsage, "want host:port"},
		{[]string{"publish", "--broker", k, "--queue", "q"}, exitUsage, "--urn is required"},
		{[]string{"publish", "--broker", k, "--queue", "q", "--urn", "urn:a:b", "--data", "{"}, exitUsage, "not valid JSON"},
		{[]string{"publish", "--broker", k, "--queue", "q", "--urn", "urn:a:b", "--data", "[1,2]"}, exitUsage, "not a JSON object"},
		{[]string{"publish", "--broker", k, "--queue", "q", "--urn", "not-a-urn"}, exitUsage, "invalid URN"},
		{[]string{"publish", "--broker", k, "--queue", "q", "--urn", "urn:babel: bad"}, exitUsage, "space"},
		{[]string{"publish", "--broker", k, "--queue", "q", "--urn", "urn:a:b", "--header", "bq-job=urn:x:y"}, exitUsage, "bq- headers belong to the contract"},
		{[]string{"publish", "--broker", k, "--queue", "q", "--urn", "urn:a:b", "--header", "novalue"}, exitUsage, "novalue"},
		{[]string{"publish", "--broker", k, "--queue", "q", "--urn", "urn:a:b", "--dial-timeout", "300ms"}, exitError, "broker unreachable"},
		{[]string{"publish", "--broker", "pulsar://127.0.0.1:1", "--queue", "q", "--urn", "urn:a:b", "--dial-timeout", "300ms"}, exitError, "broker unreachable"},
		{[]string{"publish", "--broker", k, "--queue", "q", "--stdin", "--id", "x"}, exitUsage, "--id applies to one message"},
		{[]string{"dlq", "stats", "--broker", k}, exitUsage, "--topic (-t) or --dlq"},
		{[]string{"dlq", "peek", "--broker", k, "--queue", "q", "--reason", "x"}, exitUsage, "--reason"},
		{[]string{"dlq", "discard", "--broker", k, "--queue", "q"}, exitUsage, "or --all"},
		{[]string{"redrive", "--broker", k, "--queue", "q", "--since", "soon"}, exitUsage, "--since"},
		{[]string{"redrive", "--broker", k, "--queue", "q", "--max", "-1"}, exitUsage, "--max"},
		{[]string{"redrive", "--broker", k, "--queue", "q", "--dial-timeout", "300ms"}, exitError, "broker unreachable"},
		{[]string{"topics", "ensure", "--broker", "pulsar://127.0.0.1:1", "--topic", "t", "--dial-timeout", "300ms"}, exitUsage, "needs a Kafka broker"},
		{[]string{"topics", "ensure", "--broker", k, "--topic", "t", "--tiers", "5s,1s"}, exitUsage, "ascend"},
		{[]string{"topics", "describe", "--broker", k}, exitUsage, "--topic is required"},
		{[]string{"lag", "--broker", k}, exitUsage, "--group is required"},
		{[]string{"lag", "--broker", "pulsar://127.0.0.1:1"}, exitUsage, "--topic is required"},
		{[]string{"reinject", "--broker", k}, exitUsage, "--topic is required"},
		{[]string{"reinject", "--broker", k, "--topic", "t", "--tiers", "none"}, exitUsage, "at least one tier"},
		{[]string{"tail", "--broker", k, "--queue", "q", "--follow=false"}, exitUsage, "--follow=false needs a start"},
		{[]string{"tail", "--broker", k, "--queue", "q", "--follow", "false"}, exitUsage, "after '='"},
		{[]string{"tail", "--broker", k, "--queue", "q", "--format", "{nope}"}, exitUsage, "unknown placeholder"},
		{[]string{"tail", "--broker", k, "--queue", "q", "--from-start", "--offset", "3"}, exitUsage, "exclusive"},
		{[]string{"tail", "--broker", "pulsar://127.0.0.1:1", "--queue", "q", "--offset", "3"}, exitUsage, "Kafka only"},
		{[]string{"tail", "--broker", k, "--bogus"}, exitUsage, "unknown flag: --bogus"},
		{[]string{"tail", "--bogus"}, exitUsage, "Run 'bq tail --help'"},
		{[]string{"publish", "--broker", k, "--sasl-mechanism", "plain", "--queue", "q", "--urn", "urn:a:b"}, exitUsage, "needs --sasl-user"},
		{[]string{"topics"}, exitUsage, "a subcommand is required"},
		{[]string{"topics", "nope"}, exitUsage, `unknown command "nope"`},
		{[]string{"nope"}, exitUsage, `unknown command "nope"`},
	}
	for _, c := range cases {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			var out, errOut bytes.Buffer
			code := run(context.Background(), c.args, &out, &errOut)
			if code != c.code {
				t.Errorf("exit code %d, want %d (stderr %q)", code, c.code, errOut.String())
			}
			if !strings.Contains(errOut.String()+out.String(), c.contains) {
				t.Errorf("output %q does not contain %q", errOut.String()+out.String(), c.contains)
			}
		})
	}
}

func TestRedriveReportTable(t *testing.T) {
	r := newRedriveReport("q.dlq", "g", false)
	r.add(viewRedriveItem(redrive.Item{Outcome: redrive.Moved, Target: "q"}))
	r.add(viewRedriveItem(redrive.Item{Outcome: redrive.Moved, Target: "q"}))
	r.add(viewRedriveItem(redrive.Item{Outcome: redrive.Unselected}))
	r.add(viewRedriveItem(redrive.Item{Outcome: redrive.Guarded, Position: "0/4", MessageID: "id-4", URN: "urn:a", Redrives: 3}))
	r.finish(&redrive.Result{Examined: 4, Moved: 2, Kept: 2})
	if r.Examined != 4 || r.Moved != 2 || r.Targets["q"] != 2 || len(r.Guarded) != 1 || *r.Guarded[0].Offset != 4 {
		t.Fatalf("report = %+v", r)
	}
	var buf bytes.Buffer
	if err := r.write(&buf); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"examined", "moved", "held by the replay-count guard (stay)      1", "id-4", "0/4"} {
		if !strings.Contains(buf.String(), s) {
			t.Errorf("summary lacks %q:\n%s", s, buf.String())
		}
	}
}

// clearBrokerEnv unsets the broker variables for a test.
func clearBrokerEnv(t *testing.T) {
	t.Helper()
	for _, v := range []string{envKafkaBrokers, envPulsarURL, envBrokerDeprecated, envPulsarAdmin} {
		t.Setenv(v, "")
	}
}

func TestRedriveReportNeverTruncatesSilently(t *testing.T) {
	r := newRedriveReport("q.dlq", "g", true)
	for i := range maxReportedItems + 5 {
		r.add(viewRedriveItem(redrive.Item{Outcome: redrive.Guarded, Position: fmt.Sprintf("0/%d", i)}))
	}
	r.add(viewRedriveItem(redrive.Item{Outcome: redrive.WouldMove, Target: "q"}))
	r.finish(&redrive.Result{Examined: maxReportedItems + 6, Truncated: true})
	if r.ItemsLeftOut != 6 || r.GuardedLeftOut != 5 || r.Outcomes["would_move"] != 1 || r.Outcomes["moved"] != 0 {
		t.Fatalf("left out %d items, %d guarded; outcomes %v", r.ItemsLeftOut, r.GuardedLeftOut, r.Outcomes)
	}
	var buf bytes.Buffer
	if err := r.write(&buf); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"would move", fmt.Sprintf("... and %d more held by the guard", maxReportedItems+5-maxPrintedRows), "not listed", "dry run stopped after"} {
		if !strings.Contains(buf.String(), s) {
			t.Errorf("summary lacks %q:\n%s", s, buf.String()[max(0, buf.Len()-2000):])
		}
	}
	b, _ := json.Marshal(r)
	if !strings.Contains(string(b), `"would_move":1`) || !strings.Contains(string(b), `"items_left_out":6`) {
		t.Errorf("JSON report lacks would_move or items_left_out")
	}
}

func TestBrokerFromEnvironment(t *testing.T) {
	clearBrokerEnv(t)
	resolve := func(flag string) (brokerURL, error) {
		c := connFlags{broker: flag}
		return c.url()
	}
	t.Setenv(envKafkaBrokers, "127.0.0.1:19092")
	if u, err := resolve(""); err != nil || u.Kind != kindKafka || u.Hosts[0] != "127.0.0.1:19092" {
		t.Errorf("BQ_KAFKA_BROKERS bare host:port = %+v, %v", u, err)
	}
	t.Setenv(envPulsarURL, "pulsar://127.0.0.1:6650")
	if u, err := resolve("pulsar"); err != nil || u.Kind != kindPulsar {
		t.Errorf("--broker pulsar = %+v, %v", u, err)
	}
	if u, err := resolve("a:1,b:2"); err != nil || u.Kind != kindKafka || len(u.Hosts) != 2 {
		t.Errorf("--broker a:1,b:2 = %+v, %v", u, err)
	}
	t.Setenv(envKafkaBrokers, "")
	if u, err := resolve(""); err != nil || u.Kind != kindPulsar {
		t.Errorf("BQ_PULSAR_URL alone = %+v, %v", u, err)
	}
	t.Setenv(envPulsarURL, "")
	t.Setenv(envBrokerDeprecated, "kafka://h:1")
	var warn bytes.Buffer
	c := connFlags{warn: &warn}
	if u, err := c.url(); err != nil || u.Kind != kindKafka || !strings.Contains(warn.String(), "deprecated") {
		t.Errorf("BQ_BROKER = %+v, %v, warning %q", u, err, warn.String())
	}
	if _, err := resolve("kafka"); err == nil {
		t.Error("--broker kafka without BQ_KAFKA_BROKERS: no error")
	}
}

func TestLongFlagsWithOneDash(t *testing.T) {
	got := longFlagsWithOneDash(root(), []string{"dev", "kafka", "-addr", "127.0.0.1:0", "-partitions=2", "-v", "-p", "3"})
	want := []string{"dev", "kafka", "--addr", "127.0.0.1:0", "--partitions=2", "-v", "-p", "3"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestRecordFormat(t *testing.T) {
	r := &record{Topic: "orders", Partition: 2, Offset: 9, Key: []byte("k1"), Value: deadLetterBody(t, "urn:a:b", "orders", "failed", time.UnixMilli(1))}
	for format, want := range map[string]string{
		"{topic}/{partition}@{offset} {urn} {key}": "orders/2@9 urn:a:b k1\n",
		"{{.Partition}} {{.Offset}} {{.URN}}":      "2 9 urn:a:b\n",
	} {
		f, err := parseRecordFormat(format)
		if err != nil {
			t.Fatalf("%q: %v", format, err)
		}
		var buf bytes.Buffer
		if err := f(&buf, r.view()); err != nil || buf.String() != want {
			t.Errorf("%q = %q, %v; want %q", format, buf.String(), err, want)
		}
	}
	if _, err := parseRecordFormat("{{.Nope"); err == nil {
		t.Error("a broken template parsed")
	}
}

func TestTierTopicsOf(t *testing.T) {
	tiers, gaps := tierTopicsOf("o", []string{"o", "o.dlq", "o.retry.1", "o.retry.2", "o.retry.4", "o.retry.x", "oo.retry.3", "o.retry.01"})
	if !cmp.Equal(tiers, []string{"o.retry.1", "o.retry.2"}) || !cmp.Equal(gaps, []string{"o.retry.4"}) {
		t.Errorf("tiers %v, gaps %v", tiers, gaps)
	}
	for name, want := range map[string]string{"o": "work", "o.dlq": "dlq", "o.retry.3": "retry", "o.dlq.bq-redrive.journal": "journal", "o.retry.x": "work"} {
		if got := topicKind(name); got != want {
			t.Errorf("topicKind(%q) = %q, want %q", name, got, want)
		}
	}
}

func TestEmbeddedBrokerPublishTailStats(t *testing.T) {
	b, err := devkafka.Start(devkafka.WithTopics(2, "orders", "orders.dlq"))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	url := "kafka://" + strings.Join(b.Addrs(), ",")
	runOK := func(args ...string) string {
		t.Helper()
		var out, errOut bytes.Buffer
		if code := run(ctx, args, &out, &errOut); code != exitOK {
			t.Fatalf("bq %v: exit %d, stderr %s", args, code, errOut.String())
		}
		return out.String()
	}
	for i := range 3 {
		runOK("publish", "--broker", url, "--queue", "orders", "--urn", "urn:bq:emb", "--data", fmt.Sprintf(`{"i":%d}`, i), "--key", "k")
	}
	out := runOK("tail", "--broker", url, "--queue", "orders", "--from-start", "--follow=false", "--json")
	if n := strings.Count(out, "\n"); n != 3 || strings.Count(out, `"urn":"urn:bq:emb"`) != 3 {
		t.Errorf("tail printed %d lines:\n%s", n, out)
	}
	out = runOK("dlq", "stats", "--broker", url, "--queue", "orders", "--json")
	var st dlqStats
	if err := json.Unmarshal([]byte(out), &st); err != nil || st.Total != 0 {
		t.Errorf("stats of an empty DLQ: %+v %v", st, err)
	}
}

func newTestLogger(w io.Writer) *slog.Logger {
	return slog.New(slog.NewTextHandler(w, nil))
}

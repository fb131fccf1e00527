package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
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
		"":                       "empty",
		"127.0.0.1:9092":         "want kafka://",
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
		{"ok", connFlags{dialTimeout: time.Second}, k, ""},
		{"scram ok", connFlags{dialTimeout: time.Second, saslMech: "SCRAM-SHA-512", saslUser: "u"}, k, ""},
		{"zero timeout", connFlags{}, k, "--dial-timeout"},
		{"cert without key", connFlags{dialTimeout: time.Second, tlsCert: "c"}, k, "go together"},
		{"bad mechanism", connFlags{dialTimeout: time.Second, saslMech: "gssapi", saslUser: "u"}, k, "want plain"},
		{"no user", connFlags{dialTimeout: time.Second, saslMech: "plain"}, k, "needs --sasl-user"},
		{"sasl on pulsar", connFlags{dialTimeout: time.Second, saslMech: "plain", saslUser: "u"}, p, "Kafka only"},
		{"token on kafka", connFlags{dialTimeout: time.Second, pulsarToken: "t"}, k, "Pulsar only"},
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
	for _, s := range []string{"5s,1s", "x", "0s", "1s,1s"} {
		if _, err := parseTiers(s); err == nil {
			t.Errorf("parseTiers(%q): no error", s)
		}
	}
}

func TestCommandErrorsAndExitCodes(t *testing.T) {
	t.Setenv("BQ_BROKER", "")
	cases := []struct {
		args     []string
		code     int
		contains string
	}{
		{[]string{"help"}, exitOK, "Exit codes"},
		{[]string{"publish", "-h"}, exitOK, "Examples:"},
		{[]string{"redrive", "-h"}, exitOK, "nothing is lost"},
		{[]string{"dlq", "peek", "-h"}, exitOK, "Examples:"},
		{[]string{"dlq", "stats", "-h"}, exitOK, "Examples:"},
		{[]string{"topics", "ensure", "-h"}, exitOK, "Examples:"},
		{[]string{"reinject", "-h"}, exitOK, "/metrics"},
		{[]string{"tail", "-h"}, exitOK, "Examples:"},
		{[]string{"publish", "--queue", "q", "--urn", "u"}, exitUsage, "empty (set --broker"},
		{[]string{"publish", "--broker", "kafka://h", "--queue", "q", "--urn", "u"}, exitUsage, "want host:port"},
		{[]string{"publish", "--broker", "kafka://127.0.0.1:1", "--queue", "q"}, exitUsage, "--urn are required"},
		{[]string{"publish", "--broker", "kafka://127.0.0.1:1", "--queue", "q", "--urn", "u", "--data", "{"}, exitUsage, "not valid JSON"},
		{[]string{"publish", "--broker", "kafka://127.0.0.1:1", "--queue", "q", "--urn", "u", "--header", "novalue"}, exitUsage, "want key=value"},
		{[]string{"publish", "--broker", "kafka://127.0.0.1:1", "--queue", "q", "--urn", "u", "--dial-timeout", "300ms"}, exitError, "broker unreachable"},
		{[]string{"publish", "--broker", "pulsar://127.0.0.1:1", "--queue", "q", "--urn", "u", "--dial-timeout", "300ms"}, exitError, "broker unreachable"},
		{[]string{"dlq", "stats", "--broker", "kafka://127.0.0.1:1"}, exitUsage, "--queue or --dlq"},
		{[]string{"dlq", "peek", "--broker", "kafka://127.0.0.1:1", "--queue", "q", "--reason", "x"}, exitUsage, "--reason"},
		{[]string{"redrive", "--broker", "kafka://127.0.0.1:1", "--queue", "q", "--since", "soon"}, exitUsage, "--since"},
		{[]string{"redrive", "--broker", "kafka://127.0.0.1:1", "--queue", "q", "--max", "-1"}, exitUsage, "--max"},
		{[]string{"redrive", "--broker", "kafka://127.0.0.1:1", "--queue", "q", "--dial-timeout", "300ms"}, exitError, "broker unreachable"},
		{[]string{"topics", "ensure", "--broker", "pulsar://127.0.0.1:1", "--topic", "t", "--dial-timeout", "300ms"}, exitError, "needs a Kafka broker"},
		{[]string{"topics", "ensure", "--broker", "kafka://127.0.0.1:1", "--topic", "t", "--tiers", "5s,1s"}, exitUsage, "ascend"},
		{[]string{"reinject", "--broker", "kafka://127.0.0.1:1"}, exitUsage, "--topic is required"},
		{[]string{"reinject", "--broker", "kafka://127.0.0.1:1", "--topic", "t", "--tiers", "none"}, exitUsage, "at least one tier"},
		{[]string{"tail", "--broker", "kafka://127.0.0.1:1", "--queue", "q", "--follow=false"}, exitUsage, "needs --from-start"},
		{[]string{"tail", "--broker", "kafka://127.0.0.1:1", "--bogus"}, exitUsage, "flag provided but not defined"},
		{[]string{"publish", "--broker", "kafka://127.0.0.1:1", "--sasl-mechanism", "plain", "--queue", "q", "--urn", "u"}, exitUsage, "needs --sasl-user"},
	}
	for _, c := range cases {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			var out, errOut bytes.Buffer
			code := run(context.Background(), c.args, &out, &errOut)
			if code != c.code {
				t.Errorf("exit code %d, want %d (stderr %q)", code, c.code, errOut.String())
			}
			if !strings.Contains(errOut.String(), c.contains) {
				t.Errorf("stderr %q does not contain %q", errOut.String(), c.contains)
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
		runOK("publish", "--broker", url, "--queue", "orders", "--urn", "urn:bq:emb", "--data", fmt.Sprintf(`{"i":%d}`, i))
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

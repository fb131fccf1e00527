package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/babelqueue/babelqueue-go/brokertest/devkafka"
	babelqueue "github.com/babelqueue/babelqueue-go/core"
	"github.com/babelqueue/babelqueue-go/core/driver"
	kafkago "github.com/segmentio/kafka-go"
)

// embedded starts an embedded broker with topics and returns its bare
// host:port list (as BQ_KAFKA_BROKERS holds it) and a runner of bq.
func embedded(t *testing.T, partitions int, topics ...string) (string, func(args ...string) (int, string, string)) {
	t.Helper()
	clearBrokerEnv(t)
	b, err := devkafka.Start(devkafka.WithTopics(partitions, topics...))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	addr := strings.Join(b.Addrs(), ",")
	t.Setenv(envKafkaBrokers, addr)
	return addr, func(args ...string) (int, string, string) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		var out, errOut bytes.Buffer
		code := run(ctx, args, &out, &errOut)
		return code, out.String(), errOut.String()
	}
}

func mustRun(t *testing.T, runBQ func(args ...string) (int, string, string), args ...string) string {
	t.Helper()
	code, out, errOut := runBQ(args...)
	if code != exitOK {
		t.Fatalf("bq %v: exit %d\nstdout %s\nstderr %s", args, code, out, errOut)
	}
	return out
}

func TestEmbeddedTopicsListDescribeEnsure(t *testing.T) {
	_, runBQ := embedded(t, 3, "orders", "orders.retry.1", "orders.retry.2", "orders.dlq", "other")
	out := mustRun(t, runBQ, "topics", "list", "--json", "--prefix", "orders")
	var rows []topicRow
	if err := json.Unmarshal([]byte(out), &rows); err != nil {
		t.Fatal(err, out)
	}
	want := map[string]string{"orders": "work", "orders.retry.1": "retry", "orders.retry.2": "retry", "orders.dlq": "dlq"}
	if len(rows) != len(want) {
		t.Fatalf("topics list: %+v", rows)
	}
	for _, r := range rows {
		if want[r.Topic] != r.Kind || r.Partitions != 3 {
			t.Errorf("row %+v", r)
		}
	}

	out = mustRun(t, runBQ, "topics", "describe", "-t", "orders", "--json")
	var d topicDescription
	if err := json.Unmarshal([]byte(out), &d); err != nil {
		t.Fatal(err, out)
	}
	if len(d.Partitions) != 3 || len(d.Tiers) != 2 || d.Tiers[1].Topic != "orders.retry.2" || d.DLQ != "orders.dlq" {
		t.Errorf("describe: %+v", d)
	}
	out = mustRun(t, runBQ, "topics", "describe", "-t", "orders")
	for _, s := range []string{"PARTITION", "retry tier 2: orders.retry.2", "dead-letter topic: orders.dlq"} {
		if !strings.Contains(out, s) {
			t.Errorf("describe text lacks %q:\n%s", s, out)
		}
	}
	if code, _, errOut := runBQ("topics", "describe", "-t", "missing-topic", "--timeout", "3s"); code != exitError {
		t.Errorf("describe of a missing topic: exit %d, %s", code, errOut)
	}

	// An existing topic with another partition count is reported.
	code, out, errOut := runBQ("topics", "ensure", "-t", "orders", "--partitions", "6")
	if code != exitError || !strings.Contains(out, "exists with 3 partitions, not the 6 asked") || !strings.Contains(errOut, "another partition count") {
		t.Errorf("ensure with a partition mismatch: exit %d\n%s\n%s", code, out, errOut)
	}
	// Like the library, no tiers unless asked; asked, they are created.
	out = mustRun(t, runBQ, "topics", "ensure", "-t", "fresh", "-p", "2", "--json")
	var ens []ensureResult
	if err := json.Unmarshal([]byte(out), &ens); err != nil || len(ens) != 1 || len(ens[0].Retry) != 0 || ens[0].Partition != 2 {
		t.Fatalf("ensure fresh: %s %v", out, err)
	}
	out = mustRun(t, runBQ, "topics", "ensure", "-t", "fresh", "-p", "2", "--tiers", "1s,2s", "--json")
	if err := json.Unmarshal([]byte(out), &ens); err != nil || len(ens[0].Retry) != 2 {
		t.Fatalf("ensure fresh with tiers: %s %v", out, err)
	}
}

func TestEmbeddedPublishStdinKeyTailLag(t *testing.T) {
	addr, runBQ := embedded(t, 2, "orders")
	// One data object and one whole envelope per line.
	env, err := babelqueue.Make("urn:bq:orders:whole", map[string]int{"n": 9}, babelqueue.WithQueue("orders"))
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := env.Encode()
	stdin = strings.NewReader("{\"n\":1}\n\n{\"n\":2}\n" + string(raw) + "\n")
	t.Cleanup(func() { stdin = os.Stdin })
	out := mustRun(t, runBQ, "publish", "-q", "orders", "--urn", "urn:bq:orders:created", "--stdin", "--key", "same", "--json")
	if n := strings.Count(out, "\n"); n != 3 || !strings.Contains(out, env.Meta.ID) {
		t.Fatalf("publish --stdin printed:\n%s", out)
	}
	// A bad line fails before anything is written.
	stdin = strings.NewReader("{\"n\":1}\n[1,2]\n")
	if code, _, errOut := runBQ("publish", "-q", "orders", "-u", "urn:bq:orders:created", "--stdin"); code != exitUsage || !strings.Contains(errOut, "line 2") {
		t.Errorf("bad stdin line: exit %d, %s", code, errOut)
	}

	// Every record went to one partition (the key's); tail reads it from an
	// offset with a format.
	out = mustRun(t, runBQ, "tail", "-q", "orders", "--from-start", "--no-follow", "--format", "{partition} {offset} {key} {urn}")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 3 {
		t.Fatalf("tail: %q", out)
	}
	part := strings.Fields(lines[0])[0]
	for i, l := range lines {
		f := strings.Fields(l)
		if f[0] != part || f[1] != fmt.Sprint(i) || f[2] != "same" {
			t.Errorf("line %d: %q", i, l)
		}
	}
	out = mustRun(t, runBQ, "tail", "-q", "orders", "-P", part, "--offset", "1", "--no-follow", "--format", "{{.Offset}} {{.URN}}")
	if strings.TrimSpace(out) != "1 urn:bq:orders:created\n2 urn:bq:orders:whole" {
		t.Errorf("tail from offset 1:\n%s", out)
	}
	out = mustRun(t, runBQ, "tail", "-q", "orders", "--since", "1h", "--no-follow", "--json")
	if strings.Count(out, "\n") != 3 {
		t.Errorf("tail --since 1h:\n%s", out)
	}
	out = mustRun(t, runBQ, "tail", "-q", "orders", "--since", time.Now().Add(time.Hour).Format(time.RFC3339), "--no-follow", "--json")
	if out != "" {
		t.Errorf("tail --since the future:\n%s", out)
	}

	// A group that consumed one record lags by the rest.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	r := kafkago.NewReader(kafkago.ReaderConfig{Brokers: strings.Split(addr, ","), GroupID: "workers", Topic: "orders", MaxWait: 200 * time.Millisecond})
	m, err := r.FetchMessage(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.CommitMessages(ctx, m); err != nil {
		t.Fatal(err)
	}
	r.Close()
	out = mustRun(t, runBQ, "lag", "-g", "workers", "--json")
	var rows []lagRow
	if err := json.Unmarshal([]byte(out), &rows); err != nil {
		t.Fatal(err, out)
	}
	var total int64
	for _, row := range rows {
		total += row.Lag
	}
	if len(rows) != 2 || total != 2 {
		t.Errorf("lag rows %s", out)
	}
	out = mustRun(t, runBQ, "lag", "-g", "workers", "-t", "orders")
	if !strings.Contains(out, "total lag: 2") {
		t.Errorf("lag text:\n%s", out)
	}
}

func TestEmbeddedDLQDiscard(t *testing.T) {
	addr, runBQ := embedded(t, 1, "orders", "orders.dlq")
	now := time.Now()
	for i, urn := range []string{"urn:bq:keep", "urn:bq:drop", "urn:bq:drop", "urn:bq:keep"} {
		stdin = bytes.NewReader(append(deadLetterBody(t, urn, "orders", "failed", now.Add(-time.Duration(i)*time.Minute)), '\n'))
		mustRun(t, runBQ, "publish", "-q", "orders.dlq", "--stdin")
	}
	t.Cleanup(func() { stdin = os.Stdin })
	// A poison body and a schema_version 2 one, written as other producers would.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	w := &kafkago.Writer{Addr: kafkago.TCP(strings.Split(addr, ",")...), BatchTimeout: time.Millisecond, RequiredAcks: kafkago.RequireAll}
	defer w.Close()
	poison, v2 := "\xffnot an envelope", `{"job":"urn:bq:keep","meta":{"schema_version":2},"attempts":0}`
	if err := w.WriteMessages(ctx, kafkago.Message{Topic: "orders.dlq", Key: []byte("pk"), Value: []byte(poison)},
		kafkago.Message{Topic: "orders.dlq", Value: []byte(v2), Headers: []kafkago.Header{{Key: "bq-schema-version", Value: []byte("2")}}}); err != nil {
		t.Fatal(err)
	}
	if code, _, errOut := runBQ("dlq", "discard", "-q", "orders"); code != exitUsage {
		t.Errorf("discard without a selector: exit %d %s", code, errOut)
	}
	out := mustRun(t, runBQ, "dlq", "discard", "-q", "orders", "--urn", "urn:bq:drop", "--poison", "--dry-run")
	if !regexpCount(out, "would discard", "3") {
		t.Errorf("dry run:\n%s", out)
	}
	record := filepath.Join(t.TempDir(), "discarded.jsonl")
	out = mustRun(t, runBQ, "dlq", "discard", "-q", "orders", "--urn", "urn:bq:drop", "--record", record, "--json")
	var rep redriveReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil || rep.Outcomes[outcomeDiscarded] != 2 || rep.Discarded != 2 || rep.Outcomes[outcomeUnselected] != 2 {
		t.Fatalf("discard report %s %v", out, err)
	}
	b, err := os.ReadFile(record)
	if err != nil || strings.Count(string(b), "\n") != 2 || strings.Count(string(b), `"urn":"urn:bq:drop"`) != 2 || strings.Count(string(b), `\"job\":\"urn:bq:drop\"`) != 2 {
		t.Fatalf("record file %q %v", b, err)
	}
	// The unreadable ones, by their own selectors only.
	out = mustRun(t, runBQ, "dlq", "discard", "-q", "orders", "--poison", "--unsupported-version", "--record", record, "--json")
	if err := json.Unmarshal([]byte(out), &rep); err != nil || rep.Discarded != 2 || rep.Outcomes[outcomeUnselected] != 2 {
		t.Fatalf("discard of unreadable letters %s %v", out, err)
	}
	lines := readRecord(t, record)
	if len(lines) != 4 || lines[2].Outcome != outcomeDiscarded || string(lines[2].BodyBase64) != poison || string(lines[2].Key) != "pk" ||
		lines[3].Body == nil || *lines[3].Body != v2 || lines[3].Headers["bq-schema-version"] != "2" {
		t.Fatalf("record of the unreadable letters: %+v", lines)
	}
	// Nothing was written anywhere: the DLQ's live region keeps the two
	// envelopes left, and no other topic appeared.
	out = mustRun(t, runBQ, "dlq", "stats", "-q", "orders", "--json")
	var st dlqStats
	if err := json.Unmarshal([]byte(out), &st); err != nil || st.Total != 2 || st.ByURN["urn:bq:keep"] != 2 {
		t.Errorf("stats after discard: %s %v", out, err)
	}
	if out = mustRun(t, runBQ, "topics", "list"); strings.Contains(out, "discarded") {
		t.Errorf("a discard created a topic:\n%s", out)
	}
}

func readRecord(t *testing.T, path string) []discardRecord {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []discardRecord
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var r discardRecord
		if err := json.Unmarshal([]byte(l), &r); err != nil {
			t.Fatalf("record line %q: %v", l, err)
		}
		out = append(out, r)
	}
	return out
}

// regexpCount reports whether the line holding label ends with n.
func regexpCount(out, label, n string) bool {
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), label) {
			f := strings.Fields(l)
			return f[len(f)-1] == n
		}
	}
	return false
}

func TestEmbeddedRedriveDryRunSaysWouldMove(t *testing.T) {
	_, runBQ := embedded(t, 1, "orders", "orders.dlq")
	stdin = bytes.NewReader(append(deadLetterBody(t, "urn:bq:a", "orders", "failed", time.Now()), '\n'))
	t.Cleanup(func() { stdin = os.Stdin })
	mustRun(t, runBQ, "publish", "-q", "orders.dlq", "--stdin")
	out := mustRun(t, runBQ, "redrive", "-q", "orders", "--dry-run", "--json")
	if !strings.Contains(out, `"would_move": 1`) || !strings.Contains(out, `"moved": 0`) || strings.Contains(out, `"outcome": "moved"`) {
		t.Errorf("dry run JSON:\n%s", out)
	}
	out = mustRun(t, runBQ, "redrive", "-q", "orders", "--dry-run")
	if !strings.Contains(out, "would move") {
		t.Errorf("dry run text:\n%s", out)
	}
}

func TestEmbeddedReinjectDiscoversTiers(t *testing.T) {
	addr, _ := embedded(t, 1, "orders", "orders.retry.1", "orders.retry.2")
	var cf connFlags
	cf.dialTimeout, cf.timeout = 5*time.Second, 5*time.Second
	u, err := parseBrokerURL(addr)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	k, err := cf.kafka(ctx, u)
	if err != nil {
		t.Fatal(err)
	}
	defer k.close()
	// The producers declared 1s and 2s: their records say so.
	w := &kafkago.Writer{Addr: kafkago.TCP(k.brokers...), Transport: k.client.Transport, BatchTimeout: time.Millisecond}
	defer w.Close()
	for tier, ms := range map[string]string{"orders.retry.1": "1000", "orders.retry.2": "2000"} {
		if err := w.WriteMessages(ctx, kafkago.Message{Topic: tier, Value: []byte("{}"), Headers: []kafkago.Header{{Key: "bq-delay", Value: []byte(ms)}}}); err != nil {
			t.Fatal(err)
		}
	}
	var logs bytes.Buffer
	plans, durations, err := planTiers(ctx, k, []string{"orders"}, nil, newTestLogger(&logs))
	if err != nil {
		t.Fatal(err)
	}
	if len(plans) != 1 || tiersString(plans[0].tiers) != "1s,2s" || durations["orders.retry.2"] != 2*time.Second {
		t.Fatalf("plans %+v durations %v", plans, durations)
	}
	// Configured with more tiers than exist: only the existing ones, and a warning.
	plans, _, err = planTiers(ctx, k, []string{"orders"}, []time.Duration{time.Second, 2 * time.Second, 3 * time.Second}, newTestLogger(&logs))
	if err != nil || len(plans[0].tiers) != 2 || !strings.Contains(logs.String(), "orders.retry.3") {
		t.Fatalf("plans %+v, %v, logs %s", plans, err, logs.String())
	}
	// No tier topic at all is an error.
	if _, _, err := planTiers(ctx, k, []string{"none-here"}, nil, newTestLogger(&logs)); err == nil {
		t.Error("no tier topics: no error")
	}
	// A mismatching record is counted.
	m := &tierMismatch{durations: durations, log: newTestLogger(&logs), counts: map[string]int64{}}
	m.OnReinject(ctx, &driver.Reinjection{Tier: "orders.retry.1", Delay: 5 * time.Second})
	m.OnReinject(ctx, &driver.Reinjection{Tier: "orders.retry.1", Delay: time.Second})
	if m.count("orders.retry.1") != 1 || !strings.Contains(logs.String(), "disagree") {
		t.Errorf("mismatch count %d, logs %s", m.count("orders.retry.1"), logs.String())
	}
}

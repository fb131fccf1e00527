//go:build integration

package main

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/babelqueue/babelqueue-go/brokertest"
)

// unreadableSeeds are a poison body (not UTF-8, not JSON), a
// schema_version 2 envelope and one ordinary dead letter of urn, all for
// queue.
func unreadableSeeds(queue, urn string) (poison, v2 string, seeds []seedDeadLetter) {
	poison = "\xff\x00poison{"
	v2 = `{"job":"urn:bq:d:v2","trace_id":"t","data":{},"meta":{"id":"v2-1","queue":"` + queue + `","lang":"php","schema_version":2,"created_at":1},"attempts":0}`
	return poison, v2, []seedDeadLetter{
		{key: "p", raw: []byte(poison)},
		{key: "v", raw: []byte(v2)},
		{key: "d", urn: urn, reason: "failed", queue: queue},
		{key: "k", urn: "urn:bq:d:keep", reason: "failed", queue: queue},
	}
}

// checkDiscard runs the dry run and the discard of the poison, the v2 and
// the urn:bq:d:drop dead letters on broker, and checks the report, the
// record and that the DLQ's cursor has only the kept letter left.
func checkDiscard(t *testing.T, ctx context.Context, broker, queue, poison, v2 string) {
	t.Helper()
	args := []string{"dlq", "discard", "--broker", broker, "-q", queue, "--poison", "--unsupported-version", "--urn", "urn:bq:d:drop"}
	out := mustBQ(t, ctx, append(args, "--dry-run")...)
	if !regexpCount(out, "would discard", "3") {
		t.Fatalf("dry run:\n%s", out)
	}
	record := t.TempDir() + "/discarded.jsonl"
	out = mustBQ(t, ctx, append(args, "--record", record, "--json")...)
	var rep redriveReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil || rep.Discarded != 3 || rep.Outcomes[outcomeUnselected] != 1 || rep.Moved != 0 {
		t.Fatalf("discard report %s %v", out, err)
	}
	lines := readRecord(t, record)
	byKey := map[string]discardRecord{}
	for _, l := range lines {
		byKey[string(l.Key)] = l
	}
	if len(lines) != 3 || string(byKey["p"].BodyBase64) != poison || byKey["v"].Body == nil || *byKey["v"].Body != v2 ||
		byKey["d"].URN != "urn:bq:d:drop" || byKey["d"].Body == nil {
		t.Fatalf("record: %+v", lines)
	}
	// What is left on the cursor: the kept one only, and nothing unreadable.
	out = mustBQ(t, ctx, "dlq", "discard", "--broker", broker, "-q", queue, "--all", "--poison", "--unsupported-version", "--dry-run", "--json")
	if err := json.Unmarshal([]byte(out), &rep); err != nil || rep.Examined != 1 || rep.WouldDiscard != 1 || rep.Items[0].URN != "urn:bq:d:keep" {
		t.Fatalf("after the discard the DLQ holds %s %v", out, err)
	}
	mustBQ(t, ctx, "dlq", "discard", "--broker", broker, "-q", queue, "--all", "--record", record)
	out = mustBQ(t, ctx, "dlq", "discard", "--broker", broker, "-q", queue, "--all", "--poison", "--unsupported-version", "--dry-run", "--json")
	if err := json.Unmarshal([]byte(out), &rep); err != nil || rep.Examined != 0 {
		t.Fatalf("the DLQ is not empty: %s %v", out, err)
	}
	if n := len(readRecord(t, record)); n != 4 {
		t.Errorf("record holds %d lines, want 4", n)
	}
}

func TestKafkaDLQDiscardUnreadable(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	queue := brokertest.Topic(t, "bqd")
	ensure(t, ctx, queue)
	poison, v2, seeds := unreadableSeeds(queue, "urn:bq:d:drop")
	seedDLQ(t, ctx, queue+".dlq", seeds)
	checkDiscard(t, ctx, kafkaURL(t), queue, poison, v2)
	k := testKafkaConn(t, ctx)
	defer k.close()
	if live := liveRegion(t, ctx, k, queue+".dlq", ""); len(live) != 0 {
		t.Errorf("the DLQ's live region holds %d records", len(live))
	}
	if recs := readAll(t, ctx, k, queue); len(recs) != 0 {
		t.Errorf("a discard wrote %d records to the work queue", len(recs))
	}
}

func TestPulsarDLQDiscardUnreadable(t *testing.T) {
	url := brokertest.PulsarURL(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	queue := brokertest.Topic(t, "bqd")
	poison, v2, seeds := unreadableSeeds(queue, "urn:bq:d:drop")
	seedPulsarDLQ(t, ctx, url, queue+".dlq", seeds)
	checkDiscard(t, ctx, url, queue, poison, v2)
}

//go:build integration

package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/babelqueue/babelqueue-go/brokertest"
)

// TestKafkaFirstHourMessages runs, on the real broker, the commands of
// issue 36 a new user types first: -t everywhere and the DLQ by name, a
// mistyped subcommand, a redrive of a queue that does not exist, an
// --offset past the end, and counts of one.
func TestKafkaFirstHourMessages(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	topic := brokertest.Topic(t, "firsthour")
	b := kafkaURL(t)
	out := mustBQ(t, ctx, "topics", "ensure", "-b", b, "-t", topic, "--partitions", "1")
	if !strings.Contains(out, topic+": 1 partition,") {
		t.Errorf("topics ensure: %s", out)
	}
	mustBQ(t, ctx, "publish", "-b", b, "-t", topic, "-u", "urn:bq:firsthour", "-d", `{"n":1}`)
	mustBQ(t, ctx, "publish", "-b", b, "-q", topic, "-u", "urn:bq:firsthour", "-d", `{"n":2}`)
	out = mustBQ(t, ctx, "tail", "-b", b, "-t", topic, "--from-start", "--no-follow", "--format", "{offset}")
	if out != "0\n1\n" {
		t.Errorf("tail -t: %q", out)
	}
	out = mustBQ(t, ctx, "dlq", "stats", "-b", b, "-t", topic+".dlq", "--json")
	var st dlqStats
	if err := json.Unmarshal([]byte(out), &st); err != nil || st.Topic != topic+".dlq" {
		t.Errorf("dlq stats -t <dlq>: %+v %v", st, err)
	}

	if _, errOut, code := bq(t, ctx, "dlq", "stat", "-b", b, "-q", topic); code != exitUsage || !strings.Contains(errOut, "Did you mean this?\n\tstats") {
		t.Errorf("dlq stat: exit %d %s", code, errOut)
	}
	missing := topic + "-nosuchqueue"
	out, errOut, code := bq(t, ctx, "redrive", "-b", b, "-t", missing)
	if code != exitError || out != "" || strings.Count(errOut, `topic "`+missing+`.dlq" does not exist`) != 1 {
		t.Errorf("redrive of a missing queue: exit %d, stdout %q, stderr %s", code, out, errOut)
	}
	out, errOut, code = bq(t, ctx, "tail", "-b", b, "-t", topic, "--offset", "9", "--no-follow")
	if code != exitError || out != "" || !strings.Contains(errOut, "--offset 9 is past the end of \""+topic+"\" (partition 0 ends at 2)") {
		t.Errorf("tail --offset past the end: exit %d, stdout %q, stderr %s", code, out, errOut)
	}
	if _, errOut, code := bq(t, ctx, "topics", "list", "-b", "127.0.0.1:1"); code != exitError || !strings.Contains(errOut, "connection refused") {
		t.Errorf("refused: exit %d %s", code, errOut)
	}
}

// TestPulsarRedriveOfAMissingQueue: Pulsar would create the DLQ on
// subscribe; the admin API is asked first, so a mistyped queue is one
// error, exit 1, no table, and no topic is created.
func TestPulsarRedriveOfAMissingQueue(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	t.Setenv(envPulsarAdmin, brokertest.PulsarAdminURL(t))
	b := brokertest.PulsarURL(t)
	missing := brokertest.Topic(t, "firsthour-nosuchqueue")
	for _, args := range [][]string{
		{"redrive", "-b", b, "-t", missing},
		{"dlq", "discard", "-b", b, "-t", missing, "--all", "--dry-run"},
	} {
		out, errOut, code := bq(t, ctx, args...)
		if code != exitError || out != "" || strings.Count(errOut, `topic "`+missing+`.dlq" does not exist`) != 1 {
			t.Errorf("%v: exit %d, stdout %q, stderr %s", args, code, out, errOut)
		}
	}
	out := mustBQ(t, ctx, "topics", "list", "-b", b, "--prefix", missing)
	if strings.Contains(out, missing) {
		t.Errorf("the redrive created a topic:\n%s", out)
	}
}

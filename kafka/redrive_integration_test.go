//go:build integration

package kafka

import (
	"context"
	"errors"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	kafkago "github.com/segmentio/kafka-go"

	"github.com/babelqueue/babelqueue-go/brokertest"
	babelqueue "github.com/babelqueue/babelqueue-go/core"
	"github.com/babelqueue/babelqueue-go/core/redrive"
	"github.com/babelqueue/babelqueue-go/core/wire"
)

// The redrive scenarios of redrive_test.go on the real Apache Kafka broker.

func itEnv(t *testing.T) rdEnv { return rdEnv{brokers: brokerList(t)} }

func TestIntegrationRedriveMovesKeepsAndSelections(t *testing.T) {
	scenarioMovesKeepsAndSelections(t, itEnv(t))
}

func TestIntegrationRedriveDryRun(t *testing.T) { scenarioDryRun(t, itEnv(t)) }

func TestIntegrationRedriveMax(t *testing.T) { scenarioMax(t, itEnv(t)) }

func TestIntegrationRedriveCrashPoints(t *testing.T) { scenarioCrashPoints(t, itEnv(t)) }

func TestIntegrationRedriveStopWhilePassingRecovered(t *testing.T) {
	scenarioStopWhilePassingRecovered(t, itEnv(t))
}

// TestIntegrationRedriveOverSCRAM runs a redrive through the SASL/SCRAM
// listener: the run's own client carries the transport's SASL.
func TestIntegrationRedriveOverSCRAM(t *testing.T) {
	brokers, user, password := brokertest.KafkaSASL(t)
	scenarioDryRun(t, rdEnv{brokers: brokers, opts: []Option{WithSASLSCRAM(SCRAMSHA512, user, password)}})
}

// rdHeaderKeys is the sorted key set of hs; it fails the test on a key that
// appears twice.
func rdHeaderKeys(t *testing.T, hs []kafkago.Header) []string {
	t.Helper()
	var keys []string
	seen := map[string]bool{}
	for _, h := range hs {
		if seen[h.Key] {
			t.Errorf("header %s twice in %v", h.Key, hs)
		}
		seen[h.Key] = true
		keys = append(keys, h.Key)
	}
	sort.Strings(keys)
	return keys
}

// TestIntegrationRedriveCountSurvivesRetryAndDeadLetter follows one
// message through the App's retry tier, the Reinjector, the dead-letter
// write, a redrive, the same cycle again and a redrive that the guard
// holds: bq-redrive-count is carried at every hop, and a dead letter
// carries the same header set after the second cycle as after the first.
func TestIntegrationRedriveCountSurvivesRetryAndDeadLetter(t *testing.T) {
	topic, group := uniq("it-rd-count"), uniq("g")
	tiers := WithRetryTiers(time.Second)
	tr := itTransport(t, WithGroupID(group), tiers)
	ensure(t, tr, topic, 2)
	runReinjector(t, topic, tiers)
	var runs atomic.Int32
	app, err := babelqueue.NewApp(tr, quiet, babelqueue.WithDefaultQueue(topic), babelqueue.WithMaxAttempts(2),
		babelqueue.WithPollTimeout(200*time.Millisecond), babelqueue.WithOnError(func(error) {}))
	if err != nil {
		t.Fatal(err)
	}
	app.Handle("urn:babel:orders:created", func(context.Context, *babelqueue.Envelope) error {
		runs.Add(1)
		return errors.New("still down")
	})
	key := []byte{0x01, 0x00, 'k'}
	body := envelope(t, 0)
	hs, _ := projection(body, time.Now())
	hs.set("traceparent", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01")
	hs.set(wire.HeaderRedriveCount, "1") // as if redriven once already
	produceRaw(t, kafkago.Message{Topic: topic, Key: key, Value: []byte(body), Headers: toKafkaHeaders(hs)})
	runApp(t, app, topic)

	dlq := topic + DeadLetterSuffix
	first := readTopic(t, dlq, 1, 60*time.Second, 300*time.Millisecond)
	if len(first) != 1 {
		t.Fatalf("DLQ holds %d after the first cycle", len(first))
	}
	tier := readTopic(t, RetryTopic(topic, 1), 1, 10*time.Second, 0)
	if len(tier) != 1 || hdrOf(tier[0], wire.HeaderRedriveCount) != "1" {
		t.Fatalf("retry-tier copy: %d records, headers %v", len(tier), tier[0].Headers)
	}
	if hdrOf(first[0], wire.HeaderRedriveCount) != "1" || !cmp.Equal(first[0].Key, key) {
		t.Fatalf("dead letter key %x headers %v", first[0].Key, first[0].Headers)
	}
	firstKeys := rdHeaderKeys(t, first[0].Headers)

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	rtr := itTransport(t)
	res, err := redrive.Run(ctx, rtr, dlq, redrive.WithMaxRedrives(2))
	if err != nil || res.Moved != 1 {
		t.Fatalf("first redrive %+v %v", res, err)
	}
	// The App fails it twice more and dead-letters it again.
	second := readTopic(t, dlq, 2, 60*time.Second, 300*time.Millisecond) // the first dead letter and the new one
	var latest kafkago.Message
	for _, m := range second {
		if m.Offset >= latest.Offset && m.Partition == first[0].Partition {
			latest = m
		}
	}
	if len(second) != 2 || latest.Offset == first[0].Offset {
		t.Fatalf("DLQ holds %d records after the second cycle, want 2", len(second))
	}
	if got := hdrOf(latest, wire.HeaderRedriveCount); got != "2" {
		t.Fatalf("second dead letter bq-redrive-count %q, headers %v", got, latest.Headers)
	}
	if diff := cmp.Diff(firstKeys, rdHeaderKeys(t, latest.Headers)); diff != "" {
		t.Errorf("dead-letter header set grew (-first +second):\n%s", diff)
	}
	if !cmp.Equal(latest.Key, key) {
		t.Errorf("key %x after the second cycle", latest.Key)
	}
	if n := runs.Load(); n != 4 {
		t.Errorf("handler ran %d times, want 4", n)
	}

	// The guard holds it now: redriven twice.
	res, err = redrive.Run(ctx, rtr, dlq, redrive.WithMaxRedrives(2))
	if err != nil || res.Moved != 0 || res.Examined != 1 || res.Items[0].Outcome != redrive.Guarded || res.Items[0].Redrives != 2 {
		t.Fatalf("guarded redrive %+v %v", res, err)
	}
	b := itEnv(t).broker(t)
	live := rdLive(t, ctx, b, dlq)
	if len(live) != 1 || hdr(live[0], wire.HeaderRedriveCount) != "2" || !strings.HasPrefix(hdr(live[0], wire.HeaderRedriveSource), dlq+"/") {
		t.Fatalf("live region after the guard: %d records", len(live))
	}
	time.Sleep(2 * time.Second) // nothing was sent back to work
	if n := runs.Load(); n != 4 {
		t.Errorf("handler ran %d times after the guarded redrive, want 4", n)
	}
}

func hdrOf(m kafkago.Message, key string) string {
	v, _ := lastHeader(m.Headers, key)
	return v
}

// TestIntegrationRedriveBatchTooLargeFallsBackToSingleWrites: on a DLQ
// whose max.message.bytes holds one dead letter but not three, the
// write-back of three records that stay is refused as a batch and written
// record by record; nothing is lost or doubled.
func TestIntegrationRedriveBatchTooLargeFallsBackToSingleWrites(t *testing.T) {
	e := itEnv(t)
	ctx := rdCtx(t, time.Minute)
	tr := e.transport(t)
	b := e.broker(t)
	work := rdName("rd-small")
	dlq := work + DeadLetterSuffix
	res, err := b.client.CreateTopics(ctx, &kafkago.CreateTopicsRequest{Topics: []kafkago.TopicConfig{
		{Topic: work, NumPartitions: 1, ReplicationFactor: 1},
		{Topic: dlq, NumPartitions: 1, ReplicationFactor: 1, ConfigEntries: []kafkago.ConfigEntry{{ConfigName: "max.message.bytes", ConfigValue: "1500"}}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	for topic, err := range res.Errors {
		if err != nil {
			t.Fatalf("create %s: %v", topic, err)
		}
	}
	if _, err := partitionCount(ctx, b.client, dlq); err != nil {
		t.Fatal(err)
	}
	pad := strings.Repeat("x", 500)
	var seeds []rdSeed
	for i := range 3 {
		seeds = append(seeds, rdSeed{key: []byte("k" + strconv.Itoa(i)), urn: "urn:b", headers: []kafkago.Header{{Key: "x-pad", Value: []byte(pad)}}})
	}
	e.seed(t, ctx, b, dlq, work, seeds...)
	out := runRedrive(t, ctx, tr, dlq, redrive.WithSelector(redrive.SelectURN("urn:a")))
	if out.Examined != 3 || out.Kept != 3 {
		t.Fatalf("result %+v", out)
	}
	live := rdLive(t, ctx, b, dlq)
	ids := map[string]int{}
	for _, r := range live {
		ids[rdID(r)]++
	}
	if len(live) != 3 || len(ids) != 3 {
		t.Errorf("live region holds %d records of %d messages, want 3 and 3", len(live), len(ids))
	}
	if all := rdRead(t, ctx, b, dlq, nil); len(all) != 6 {
		t.Errorf("DLQ holds %d records, want 3 and their 3 write-backs", len(all))
	}
}

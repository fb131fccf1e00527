//go:build integration

package kafka

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	kafkago "github.com/segmentio/kafka-go"

	"github.com/babelqueue/babelqueue-go/brokertest"
	babelqueue "github.com/babelqueue/babelqueue-go/core"
	"github.com/babelqueue/babelqueue-go/core/driver"
	"github.com/babelqueue/babelqueue-go/core/wire"
)

// keyFor returns a key the Java partitioner puts on partition p of n.
func keyFor(p, n int, salt string) []byte {
	for i := 0; ; i++ {
		k := []byte(fmt.Sprintf("%s\x00\xff-%d", salt, i))
		if PartitionForKey(k, n) == p {
			return k
		}
	}
}

func bgCtx(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

func TestIntegrationPublishProjectionTimestampAndPartitioning(t *testing.T) {
	tr := itTransport(t)
	topic := uniq("it-proj")
	ensure(t, tr, topic, 3)
	ctx := bgCtx(t, 30*time.Second)
	body := envelope(t, 0)
	if err := tr.PublishWithHeaders(ctx, topic, body, map[string]string{"traceparent": "00-aa-bb-01"}); err != nil {
		t.Fatal(err)
	}
	// "foobar" hashes (Java murmur2) to partition 0 of 3.
	from := &babelqueue.ReceivedMessage{Queue: "elsewhere", Handle: &delivery{msg: kafkago.Message{Topic: "elsewhere", Key: []byte("foobar")}}}
	if err := tr.PublishFrom(ctx, topic, body, from); err != nil {
		t.Fatal(err)
	}
	got := readTopic(t, topic, 2, 20*time.Second, 200*time.Millisecond)
	if len(got) != 2 {
		t.Fatalf("%d records", len(got))
	}
	var plain, keyed kafkago.Message
	for _, m := range got {
		if m.Key == nil {
			plain = m
		} else {
			keyed = m
		}
	}
	if string(plain.Value) != body {
		t.Fatalf("value %q", plain.Value)
	}
	want := append(contractHeaders("0"), h("traceparent", "00-aa-bb-01"))
	if diff := cmp.Diff(want, plain.Headers); diff != "" {
		t.Fatalf("headers (-want +got):\n%s", diff)
	}
	if plain.Time.UnixMilli() != createdMs {
		t.Fatalf("timestamp %d, want created_at %d", plain.Time.UnixMilli(), createdMs)
	}
	if string(keyed.Key) != "foobar" || keyed.Partition != 0 {
		t.Fatalf("keyed record on partition %d with key %q, want 0 and foobar", keyed.Partition, keyed.Key)
	}
}

func TestIntegrationEnsureTopicsIdempotentWithLogAppendTime(t *testing.T) {
	tr := itTransport(t, WithRetryTiers(time.Second, 2*time.Second))
	topic := uniq("it-ensure")
	ensure(t, tr, topic, 3)
	ensure(t, tr, topic, 3) // idempotent
	client := adminClient(t)
	ctx := bgCtx(t, 30*time.Second)
	names := []string{topic, RetryTopic(topic, 1), RetryTopic(topic, 2), topic + ".dlq"}
	meta, err := client.Metadata(ctx, &kafkago.MetadataRequest{Topics: names})
	if err != nil {
		t.Fatal(err)
	}
	for _, tp := range meta.Topics {
		if tp.Error != nil || len(tp.Partitions) != 3 {
			t.Fatalf("%s: %v, %d partitions", tp.Name, tp.Error, len(tp.Partitions))
		}
	}
	// Retry tiers are LogAppendTime topics; the work topic keeps the
	// broker default.
	res, err := client.DescribeConfigs(ctx, &kafkago.DescribeConfigsRequest{Resources: []kafkago.DescribeConfigRequestResource{
		{ResourceType: kafkago.ResourceTypeTopic, ResourceName: RetryTopic(topic, 1), ConfigNames: []string{"message.timestamp.type"}},
		{ResourceType: kafkago.ResourceTypeTopic, ResourceName: RetryTopic(topic, 2), ConfigNames: []string{"message.timestamp.type"}},
		{ResourceType: kafkago.ResourceTypeTopic, ResourceName: topic, ConfigNames: []string{"message.timestamp.type"}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, r := range res.Resources {
		for _, e := range r.ConfigEntries {
			got[r.ResourceName] = e.ConfigValue
		}
	}
	want := map[string]string{RetryTopic(topic, 1): "LogAppendTime", RetryTopic(topic, 2): "LogAppendTime", topic: "CreateTime"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("message.timestamp.type (-want +got):\n%s", diff)
	}
}

func TestIntegrationProcessThenCommit(t *testing.T) {
	topic, group := uniq("it-commit"), uniq("g")
	admin := itTransport(t)
	ensure(t, admin, topic, 1)
	ctx := bgCtx(t, 60*time.Second)
	if err := admin.Publish(ctx, topic, envelope(t, 0)); err != nil {
		t.Fatal(err)
	}
	first := itTransport(t, WithGroupID(group))
	m := popWithin(t, first, topic, 20*time.Second)
	if m == nil {
		t.Fatal("nothing delivered")
	}
	if err := first.Close(); err != nil { // closed before Ack
		t.Fatal(err)
	}
	second := itTransport(t, WithGroupID(group))
	again := popWithin(t, second, topic, 20*time.Second)
	if again == nil || again.Body != m.Body {
		t.Fatalf("not delivered again after a close without Ack: %v", again)
	}
	if err := second.Ack(ctx, again); err != nil {
		t.Fatal(err)
	}
	if err := second.Close(); err != nil { // flushes the batched commit
		t.Fatal(err)
	}
	third := itTransport(t, WithGroupID(group))
	if m := popWithin(t, third, topic, 3*time.Second); m != nil {
		t.Fatalf("acknowledged record delivered again: %q", m.Body)
	}
}

func TestIntegrationRewind(t *testing.T) {
	topic, group := uniq("it-rewind"), uniq("g")
	tr := itTransport(t, WithGroupID(group))
	ensure(t, tr, topic, 1)
	ctx := bgCtx(t, 60*time.Second)
	if err := tr.PublishBatch(ctx, topic, "a", "b", "c"); err != nil {
		t.Fatal(err)
	}
	a := popWithin(t, tr, topic, 20*time.Second)
	if err := tr.Ack(ctx, a); err != nil {
		t.Fatal(err)
	}
	b := popWithin(t, tr, topic, 5*time.Second)
	if b == nil || b.Body != "b" {
		t.Fatalf("second pop %v", b)
	}
	if err := tr.Rewind(ctx, b); err != nil {
		t.Fatal(err)
	}
	again := popWithin(t, tr, topic, 20*time.Second)
	if again == nil || again.Body != "b" {
		t.Fatalf("after Rewind got %v, want b", again)
	}
	c := popWithin(t, tr, topic, 5*time.Second)
	if err := tr.Ack(ctx, again); err != nil {
		t.Fatal(err)
	}
	if err := tr.Ack(ctx, c); err != nil {
		t.Fatal(err)
	}
	_ = tr.Close()
	next := itTransport(t, WithGroupID(group))
	if m := popWithin(t, next, topic, 3*time.Second); m != nil {
		t.Fatalf("delivered %q after everything was acknowledged", m.Body)
	}
}

func TestIntegrationKeyKeptThroughRetryReinjectAndDLQ(t *testing.T) {
	topic := uniq("it-key")
	tr := itTransport(t, WithGroupID(uniq("g")), WithRetryTiers(time.Second))
	ensure(t, tr, topic, 3)
	ctx := bgCtx(t, 90*time.Second)
	key := []byte{0x00, 0xfe, 'k', 0x80, 0x00}
	body := envelope(t, 0)
	hs, _ := projection(body, time.Now())
	produceRaw(t, kafkago.Message{Topic: topic, Key: key, Value: []byte(body),
		Headers: append(toKafkaHeaders(hs), h("traceparent", "00-tp-01"), h("x-other", "kept on retry"))})

	reinject := itTransport(t, WithGroupID(uniq("reinject")), WithRetryTiers(time.Second))
	stopReinjector := startReinjector(t, ctx, reinject, topic)
	defer stopReinjector()

	m := popWithin(t, tr, topic, 20*time.Second)
	if err := tr.PublishRetryForAttempt(ctx, m, 0); err != nil {
		t.Fatal(err)
	}
	if err := tr.Ack(ctx, m); err != nil {
		t.Fatal(err)
	}
	retried := popWithin(t, tr, topic, 30*time.Second)
	if retried == nil {
		t.Fatal("retry never re-injected")
	}
	d, _ := recordOf(retried)
	if !cmp.Equal(d.msg.Key, key) {
		t.Fatalf("key after re-inject %x, want %x", d.msg.Key, key)
	}
	if d.msg.Partition != PartitionForKey(key, 3) {
		t.Fatalf("partition %d, want %d", d.msg.Partition, PartitionForKey(key, 3))
	}
	if retried.Body != envelope(t, 1) || retried.Headers["bq-attempts"] != "1" {
		t.Fatalf("retried body %s headers %v", retried.Body, retried.Headers)
	}
	wantKeys := []string{"bq-job", "bq-trace-id", "bq-message-id", "bq-schema-version", "bq-source-lang", "bq-attempts", "traceparent", "x-other"}
	if diff := cmp.Diff(wantKeys, headerKeys(d.msg.Headers)); diff != "" {
		t.Fatalf("re-injected headers (-want +got):\n%s", diff)
	}
	tier := readTopic(t, RetryTopic(topic, 1), 1, 10*time.Second, 0)
	if len(tier) != 1 || !cmp.Equal(tier[0].Key, key) {
		t.Fatalf("tier record %+v", tier)
	}
	if v, _ := lastHeader(tier[0].Headers, "bq-delay"); v != "1000" {
		t.Fatalf("bq-delay %q", v)
	}
	if v, _ := lastHeader(tier[0].Headers, "bq-original-topic"); v != topic {
		t.Fatalf("bq-original-topic %q", v)
	}
	dead, err := wire.AnnotateDeadLetter([]byte(retried.Body), wire.DeadLetter{Reason: wire.ReasonFailed, OriginalQueue: topic, Attempts: 2, Lang: "go", FailedAt: time.Now().UnixMilli()})
	if err != nil {
		t.Fatal(err)
	}
	if err := tr.PublishFrom(ctx, topic+".dlq", string(dead), retried); err != nil {
		t.Fatal(err)
	}
	if err := tr.Ack(ctx, retried); err != nil {
		t.Fatal(err)
	}
	dlq := readTopic(t, topic+".dlq", 1, 10*time.Second, 0)
	if len(dlq) != 1 || !cmp.Equal(dlq[0].Key, key) || string(dlq[0].Value) != string(dead) {
		t.Fatalf("dlq record %+v", dlq)
	}
	if _, ok := lastHeader(dlq[0].Headers, "traceparent"); ok {
		t.Fatal("a dead letter to another topic must not carry the trace headers")
	}
}

func TestIntegrationHeadersDoNotGrowAcrossHops(t *testing.T) {
	topic := uniq("it-hops")
	tiers := WithRetryTiers(time.Millisecond * 100)
	tr := itTransport(t, WithGroupID(uniq("g")), tiers)
	ensure(t, tr, topic, 1)
	ctx := bgCtx(t, 120*time.Second)
	reinject := itTransport(t, WithGroupID(uniq("reinject")), tiers)
	stopReinjector := startReinjector(t, ctx, reinject, topic)
	defer stopReinjector()
	if err := tr.PublishWithHeaders(ctx, topic, envelope(t, 0), map[string]string{"traceparent": "00-x-y-01", "tracestate": "a=b", "baggage": "k=v"}); err != nil {
		t.Fatal(err)
	}
	var afterOne []string
	for hop := 0; hop <= 10; hop++ {
		m := popWithin(t, tr, topic, 30*time.Second)
		if m == nil {
			t.Fatalf("hop %d: nothing delivered", hop)
		}
		d, _ := recordOf(m)
		keys := headerKeys(d.msg.Headers)
		if hop == 1 {
			afterOne = keys
		}
		if hop > 1 {
			if diff := cmp.Diff(afterOne, keys); diff != "" {
				t.Fatalf("hop %d headers differ from hop 1 (-1 +%d):\n%s", hop, hop, diff)
			}
		}
		if m.Headers["bq-attempts"] != fmt.Sprint(hop) {
			t.Fatalf("hop %d: bq-attempts %q", hop, m.Headers["bq-attempts"])
		}
		if hop > 0 && m.Headers["babelqueue-retry-link"] != fmt.Sprintf("link-%d", hop-1) {
			t.Fatalf("hop %d: retry link %q", hop, m.Headers["babelqueue-retry-link"])
		}
		if m.Headers["traceparent"] != "00-x-y-01" || m.Headers["baggage"] != "k=v" {
			t.Fatalf("hop %d: trace context lost: %v", hop, m.Headers)
		}
		if hop < 10 {
			// As the otel decorator does: the copy handed on names the
			// failed attempt in the retry link.
			linked := *m
			linked.Headers = maps.Clone(m.Headers)
			linked.Headers["babelqueue-retry-link"] = fmt.Sprintf("link-%d", hop)
			if err := tr.PublishRetryForAttempt(ctx, &linked, hop); err != nil {
				t.Fatal(err)
			}
		}
		if err := tr.Ack(ctx, m); err != nil {
			t.Fatal(err)
		}
	}
}

func TestIntegrationTiersEndToEndOverThreePartitions(t *testing.T) {
	topic := uniq("it-tiers")
	tiers := WithRetryTiers(time.Second, 2*time.Second)
	tr := itTransport(t, WithGroupID(uniq("g")), tiers)
	ensure(t, tr, topic, 3)
	ctx := bgCtx(t, 120*time.Second)
	reinject := itTransport(t, WithGroupID(uniq("reinject")), tiers)
	stopReinjector := startReinjector(t, ctx, reinject, topic)
	defer stopReinjector()

	body := envelope(t, 0)
	for p := 0; p < 3; p++ {
		produceRaw(t, kafkago.Message{Topic: topic, Key: keyFor(p, 3, "tiers"), Value: []byte(body)})
	}
	retriedAt := map[string]time.Time{}
	deliveries := map[string][]int{}
	for len(deliveries) < 3 || !allThree(deliveries) {
		m := popWithin(t, tr, topic, 30*time.Second)
		if m == nil {
			t.Fatalf("stalled with deliveries %v", deliveries)
		}
		d, _ := recordOf(m)
		k := string(d.msg.Key)
		n := deliveredAttempts(m)
		deliveries[k] = append(deliveries[k], n)
		if n > 0 {
			waited := time.Since(retriedAt[k])
			want := []time.Duration{time.Second, 2 * time.Second}[n-1]
			if waited < want-50*time.Millisecond {
				t.Fatalf("attempt %d of %x back after %v, before its %v tier", n, k, waited, want)
			}
		}
		if n < 2 {
			retriedAt[k] = time.Now()
			if err := tr.PublishRetryForAttempt(ctx, m, n); err != nil {
				t.Fatal(err)
			}
		}
		if err := tr.Ack(ctx, m); err != nil {
			t.Fatal(err)
		}
	}
	for k, seq := range deliveries {
		if diff := cmp.Diff([]int{0, 1, 2}, seq); diff != "" {
			t.Fatalf("key %x attempts (-want +got):\n%s", k, diff)
		}
	}
	for n, ms := range map[int]string{1: "1000", 2: "2000"} {
		recs := readTopic(t, RetryTopic(topic, n), 3, 10*time.Second, 100*time.Millisecond)
		parts := map[int]bool{}
		for _, m := range recs {
			if v, _ := lastHeader(m.Headers, "bq-delay"); v != ms {
				t.Fatalf("tier %d record bq-delay %q", n, v)
			}
			parts[m.Partition] = true
		}
		if len(recs) != 3 || len(parts) != 3 {
			t.Fatalf("tier %d holds %d records on %d partitions", n, len(recs), len(parts))
		}
	}
}

func allThree(d map[string][]int) bool {
	for _, s := range d {
		if len(s) < 3 {
			return false
		}
	}
	return true
}

func setMaxMessageBytes(t testing.TB, topic string, n int) {
	t.Helper()
	client := adminClient(t)
	res, err := client.IncrementalAlterConfigs(bgCtx(t, 20*time.Second), &kafkago.IncrementalAlterConfigsRequest{
		Resources: []kafkago.IncrementalAlterConfigsRequestResource{{
			ResourceType: kafkago.ResourceTypeTopic,
			ResourceName: topic,
			Configs:      []kafkago.IncrementalAlterConfigsRequestConfig{{Name: "max.message.bytes", Value: fmt.Sprint(n), ConfigOperation: kafkago.ConfigOperationSet}},
		}},
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range res.Resources {
		if r.Error != nil {
			t.Fatal(r.Error)
		}
	}
}

func TestIntegrationFailedRetryWriteLeavesOriginalUncommitted(t *testing.T) {
	topic, group := uniq("it-fault"), uniq("g")
	tr := itTransport(t, WithGroupID(group), WithRetryTiers(time.Second))
	ensure(t, tr, topic, 1)
	setMaxMessageBytes(t, RetryTopic(topic, 1), 100) // the retry write is refused
	ctx := bgCtx(t, 90*time.Second)
	if err := tr.Publish(ctx, topic, envelope(t, 0)); err != nil {
		t.Fatal(err)
	}
	m := popWithin(t, tr, topic, 20*time.Second)
	err := tr.PublishRetryForAttempt(ctx, m, 0)
	if !errors.Is(err, ErrRecordTooLarge) {
		t.Fatalf("retry write error %v, want ErrRecordTooLarge", err)
	}
	if err := tr.Rewind(ctx, m); err != nil {
		t.Fatal(err)
	}
	again := popWithin(t, tr, topic, 20*time.Second)
	if again == nil || again.Body != m.Body {
		t.Fatalf("original not delivered again after the failed write: %v", again)
	}
	setMaxMessageBytes(t, RetryTopic(topic, 1), 1048588) // the fault clears
	// The broker applies a topic config change asynchronously.
	for deadline := time.Now().Add(20 * time.Second); ; {
		err := tr.PublishRetryForAttempt(ctx, again, 0)
		if err == nil {
			break
		}
		if !errors.Is(err, ErrRecordTooLarge) || time.Now().After(deadline) {
			t.Fatal(err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if err := tr.Ack(ctx, again); err != nil {
		t.Fatal(err)
	}
	_ = tr.Close()
	next := itTransport(t, WithGroupID(group))
	if m := popWithin(t, next, topic, 3*time.Second); m != nil {
		t.Fatal("original delivered after its retry was written and acknowledged")
	}
	if n := len(readTopic(t, RetryTopic(topic, 1), 1, 10*time.Second, 200*time.Millisecond)); n != 1 {
		t.Fatalf("retry topic holds %d records, want 1", n)
	}
}

func TestIntegrationVersionGateForwardsUnchanged(t *testing.T) {
	topic := uniq("it-gate")
	var mu sync.Mutex
	var hooked []string
	tr := itTransport(t, WithGroupID(uniq("g")), WithOnSchemaVersionRejected(func(v, q string) {
		mu.Lock()
		hooked = append(hooked, v+"@"+q)
		mu.Unlock()
	}))
	ensure(t, tr, topic, 1)
	ctx := bgCtx(t, 60*time.Second)
	body := `{"job":"urn:x","schema":"v2 body \u00e9",  "attempts":0}`
	produceRaw(t, kafkago.Message{Topic: topic, Key: []byte("k1"), Value: []byte(body),
		Headers: []kafkago.Header{h("bq-schema-version", "2"), h("bq-attempts", "4"), h("bq-job", "urn:x")}})
	m := popWithin(t, tr, topic, 20*time.Second)
	if m.Body != body {
		t.Fatalf("gated body changed: %q", m.Body)
	}
	mu.Lock()
	if diff := cmp.Diff([]string{"2@" + topic}, hooked); diff != "" {
		t.Fatalf("hook (-want +got):\n%s", diff)
	}
	mu.Unlock()
	if _, err := tr.Send(ctx, &driver.Outgoing{Intent: driver.IntentForward, Queue: topic + ".dlq", Body: m.Body, From: m, Headers: m.Headers}); err != nil {
		t.Fatal(err)
	}
	got := readTopic(t, topic+".dlq", 1, 10*time.Second, 0)
	want := []kafkago.Header{h("bq-schema-version", "2"), h("bq-attempts", "4"), h("bq-job", "urn:x")} // as received
	if len(got) != 1 || string(got[0].Value) != body || string(got[0].Key) != "k1" {
		t.Fatalf("dlq %+v", got)
	}
	if diff := cmp.Diff(want, got[0].Headers); diff != "" {
		t.Fatalf("dlq headers (-want +got):\n%s", diff)
	}
}

func TestIntegrationPoisonShapesKeepKeyAndRouting(t *testing.T) {
	topic := uniq("it-poison")
	tr := itTransport(t, WithGroupID(uniq("g")))
	ensure(t, tr, topic, 1)
	ctx := bgCtx(t, 60*time.Second)
	bodies := []string{"not json", "{\"job\":\"\",\"x\":1}", "\xff\xfe"}
	for i, b := range bodies {
		produceRaw(t, kafkago.Message{Topic: topic, Key: []byte(fmt.Sprint("key-", i)), Value: []byte(b), Headers: []kafkago.Header{h("bq-job", "urn:route")}})
	}
	for range bodies {
		m := popWithin(t, tr, topic, 20*time.Second)
		poison := wire.PoisonBody([]byte(m.Body), wire.DeadLetter{Reason: wire.ReasonPoison, OriginalQueue: topic, Lang: "go", FailedAt: time.Now().UnixMilli()})
		if err := tr.PublishFromWithHeaders(ctx, topic+".dlq", string(poison), m, map[string]string{"bq-job": m.Headers["bq-job"]}); err != nil {
			t.Fatal(err)
		}
		if err := tr.Ack(ctx, m); err != nil {
			t.Fatal(err)
		}
	}
	got := readTopic(t, topic+".dlq", 3, 10*time.Second, 0)
	sort.Slice(got, func(i, j int) bool { return string(got[i].Key) < string(got[j].Key) })
	for i, m := range got {
		if string(m.Key) != fmt.Sprint("key-", i) {
			t.Fatalf("dlq record %d key %q", i, m.Key)
		}
		if v, _ := lastHeader(m.Headers, "bq-job"); v != "urn:route" {
			t.Fatalf("dlq record %d bq-job %q", i, v)
		}
		if !strings.Contains(string(m.Value), `"reason":"poison"`) {
			t.Fatalf("dlq record %d body %s", i, m.Value)
		}
	}
	if !strings.HasPrefix(string(got[1].Value), `{"job":"","x":1`) {
		t.Fatalf("object poison must keep its bytes: %s", got[1].Value)
	}
	if !strings.Contains(string(got[2].Value), `"raw_encoding":"base64"`) {
		t.Fatalf("non-UTF-8 poison must be base64-wrapped: %s", got[2].Value)
	}
}

func TestIntegrationCloseRules(t *testing.T) {
	topic, group := uniq("it-close"), uniq("g")
	tr := itTransport(t, WithGroupID(group))
	ensure(t, tr, topic, 1)
	ctx := bgCtx(t, 60*time.Second)
	if err := tr.Publish(ctx, topic, "x"); err != nil {
		t.Fatal(err)
	}
	m := popWithin(t, tr, topic, 20*time.Second)
	if err := tr.Close(); err != nil {
		t.Fatal(err)
	}
	if err := tr.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := tr.Pop(ctx, topic, time.Second); !errors.Is(err, ErrClosed) {
		t.Fatalf("Pop after Close: %v", err)
	}
	if err := tr.Ack(ctx, m); !errors.Is(err, ErrClosed) {
		t.Fatalf("Ack after Close: %v", err)
	}
	if err := tr.Publish(ctx, topic, "y"); !errors.Is(err, ErrClosed) {
		t.Fatalf("Publish after Close: %v", err)
	}
	// The closed reader left the group: a new member gets the partition.
	next := itTransport(t, WithGroupID(group))
	if got := popWithin(t, next, topic, 20*time.Second); got == nil || got.Body != "x" {
		t.Fatalf("new member got %v", got)
	}
}

func TestIntegrationSCRAM(t *testing.T) {
	addrs, user, pass := brokertest.KafkaSASL(t)
	for _, algo := range []SCRAMAlgorithm{SCRAMSHA256, SCRAMSHA512} {
		t.Run(fmt.Sprint(algo), func(t *testing.T) {
			tr, err := New(WithBrokers(addrs...), WithGroupID(uniq("g")), WithSASLSCRAM(algo, user, pass))
			if err != nil {
				t.Fatal(err)
			}
			defer tr.Close()
			topic := uniq("it-scram")
			ensure(t, tr, topic, 1)
			ctx := bgCtx(t, 60*time.Second)
			if err := tr.Publish(ctx, topic, envelope(t, 0)); err != nil {
				t.Fatal(err)
			}
			if m := popWithin(t, tr, topic, 20*time.Second); m == nil || m.Body != envelope(t, 0) {
				t.Fatalf("SCRAM round trip got %v", m)
			}
		})
	}
	bad, err := New(WithBrokers(addrs...), WithSASLSCRAM(SCRAMSHA512, user, pass+"-wrong"))
	if err != nil {
		t.Fatal(err)
	}
	defer bad.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := bad.Publish(ctx, uniq("it-scram-bad"), "x"); err == nil {
		t.Fatal("publish with a wrong SCRAM password succeeded")
	}
}

func TestIntegrationSecondReinjectorJoiningMidWaitLosesNothing(t *testing.T) {
	topic, group := uniq("it-rebalance"), uniq("reinject")
	tier := 3 * time.Second
	tiers := WithRetryTiers(tier)
	pub := itTransport(t, tiers)
	ensure(t, pub, topic, 3)
	ctx := bgCtx(t, 120*time.Second)
	start := func() func() {
		return startReinjector(t, ctx, itTransport(t, WithReinjectGroupID(group), tiers), topic)
	}
	stopA := start()
	defer stopA()
	// Warm-up: wait until A owns the partitions and carries records.
	if err := pub.PublishDelayed(ctx, topic, "warm-up", time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if n := len(readTopic(t, topic, 1, 30*time.Second, 0)); n != 1 {
		t.Fatal("warm-up record never re-injected")
	}
	const n = 30
	published := time.Now()
	for i := 0; i < n; i++ {
		if err := pub.PublishDelayed(ctx, topic, fmt.Sprint("rec-", i), tier); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(500 * time.Millisecond)
	stopB := start() // joins while every record waits
	defer stopB()
	time.Sleep(time.Second)
	if committed := committedTotal(t, group, RetryTopic(topic, 1), 3); committed > 1 {
		t.Fatalf("%d retry records committed before their tier elapsed", committed-1)
	}
	got := readTopic(t, topic, n+1, 60*time.Second, 2*time.Second)
	seen := map[string]int{}
	for _, m := range got {
		seen[string(m.Value)]++
		if string(m.Value) != "warm-up" && m.Time.Before(published.Add(tier-100*time.Millisecond)) {
			t.Fatalf("%s re-injected at %v, before its tier (published %v)", m.Value, m.Time, published)
		}
	}
	for i := 0; i < n; i++ {
		if seen[fmt.Sprint("rec-", i)] == 0 {
			t.Fatalf("rec-%d lost (seen %v)", i, seen)
		}
	}
	dups := len(got) - len(seen)
	t.Logf("%d records re-injected, %d duplicates", len(got), dups)
}

// committedTotal sums the committed offsets of group on topic.
func committedTotal(t testing.TB, group, topic string, partitions int) int64 {
	t.Helper()
	client := adminClient(t)
	parts := make([]int, partitions)
	for i := range parts {
		parts[i] = i
	}
	res, err := client.OffsetFetch(bgCtx(t, 10*time.Second), &kafkago.OffsetFetchRequest{GroupID: group, Topics: map[string][]int{topic: parts}})
	if err != nil {
		t.Fatal(err)
	}
	var total int64
	for _, p := range res.Topics[topic] {
		if p.CommittedOffset > 0 {
			total += p.CommittedOffset
		}
	}
	return total
}

// Acknowledged offsets wait in the batch (a long commit interval here) and
// are committed when the partitions are revoked: a member that joins later
// gets none of the acknowledged records again.
func TestIntegrationBatchedCommitsFlushedOnRevokeAndClose(t *testing.T) {
	topic, group := uniq("it-flush"), uniq("g")
	pub := itTransport(t)
	ensure(t, pub, topic, 2)
	ctx := bgCtx(t, 90*time.Second)
	for p := 0; p < 2; p++ {
		for i := 0; i < 3; i++ {
			produceRaw(t, kafkago.Message{Topic: topic, Key: keyFor(p, 2, "flush"), Value: []byte(fmt.Sprintf("old-%d-%d", p, i))})
		}
	}
	a := itTransport(t, WithGroupID(group), WithCommitInterval(time.Minute))
	for i := 0; i < 6; i++ {
		m := popWithin(t, a, topic, 20*time.Second)
		if m == nil {
			t.Fatalf("A got %d of 6", i)
		}
		if err := a.Ack(ctx, m); err != nil {
			t.Fatal(err)
		}
	}
	if got := committedTotal(t, group, topic, 2); got != 0 {
		t.Fatalf("%d offsets committed before the interval, the revoke or Close", got)
	}
	b := itTransport(t, WithGroupID(group))
	for p := 0; p < 2; p++ {
		produceRaw(t, kafkago.Message{Topic: topic, Key: keyFor(p, 2, "flush"), Value: []byte(fmt.Sprintf("new-%d", p))})
	}
	// B joins; A's reader gives up its partitions and flushes its commits.
	deadline := time.Now().Add(30 * time.Second)
	var gotB []string
	for time.Now().Before(deadline) && len(gotB) == 0 {
		if m, err := b.Pop(ctx, topic, time.Second); err != nil {
			t.Fatal(err)
		} else if m != nil {
			gotB = append(gotB, m.Body)
		}
	}
	for _, v := range gotB {
		if strings.HasPrefix(v, "old-") {
			t.Fatalf("B got acknowledged record %s again: commits were not flushed on revoke", v)
		}
	}
	if len(gotB) == 0 {
		t.Fatal("B never got a partition")
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	if got := committedTotal(t, group, topic, 2); got < 6 {
		t.Fatalf("committed total %d after revoke and Close, want at least 6", got)
	}
}

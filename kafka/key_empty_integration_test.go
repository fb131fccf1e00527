//go:build integration

package kafka

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	kafkago "github.com/segmentio/kafka-go"

	babelqueue "github.com/babelqueue/babelqueue-go/core"
	"github.com/babelqueue/babelqueue-go/core/redrive"
	"github.com/babelqueue/babelqueue-go/core/wire"
)

// rawRecord is a record as the broker holds it: Key nil for a null key,
// non-nil (maybe empty) otherwise.
type rawRecord struct {
	Offset  int64
	Key     []byte
	Value   []byte
	Headers map[string]string
}

// rawRecords reads partition 0 of topic with the protocol client, which
// keeps a null key apart from an empty one.
func rawRecords(t *testing.T, topic string) ([]rawRecord, error) {
	t.Helper()
	ctx := bgCtx(t, 20*time.Second)
	res, err := adminClient(t).Fetch(ctx, &kafkago.FetchRequest{Addr: kafkago.TCP(brokerList(t)[0]), Topic: topic, Partition: 0,
		Offset: 0, MinBytes: 1, MaxBytes: 10 << 20, MaxWait: 100 * time.Millisecond})
	if err != nil {
		return nil, err
	}
	if res.Error != nil {
		return nil, res.Error // a topic just created may have no leader yet
	}
	var out []rawRecord
	for {
		r, err := res.Records.ReadRecord()
		if err != nil {
			return out, nil
		}
		rec := rawRecord{Offset: r.Offset, Headers: map[string]string{}}
		if r.Key != nil {
			if rec.Key, err = kafkago.ReadAll(r.Key); err != nil {
				t.Fatal(err)
			}
			if rec.Key == nil {
				rec.Key = []byte{}
			}
		}
		if r.Value != nil {
			if rec.Value, err = kafkago.ReadAll(r.Value); err != nil {
				t.Fatal(err)
			}
		}
		for _, h := range r.Headers {
			rec.Headers[h.Key] = string(h.Value)
		}
		out = append(out, rec)
	}
}

// keysByTrace waits until topic holds want records matching keep and returns
// their keys by bq-trace-id.
func keysByTrace(t *testing.T, topic string, want int, keep func(rawRecord) bool) map[string][]byte {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		got := map[string][]byte{}
		recs, err := rawRecords(t, topic)
		for _, r := range recs {
			if keep(r) {
				got[r.Headers[wire.HeaderTraceID]] = r.Key
			}
		}
		if len(got) >= want {
			return got
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s holds %d of the %d records expected (last read: %v)", topic, len(got), want, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// TestIntegrationEmptyAndNullKeysSurviveEveryHop: a raw producer writes
// records with a null key, an empty key and a set one, in one batch,
// uncompressed and compressed (the tap decompresses a batch to read its
// keys). Through every hop,
// read back raw from the broker, each key stays as written: the retry copy
// on the tier topic, the copy the re-injector writes back to the work
// topic, the dead letter, and the record a redrive writes back. Before the
// fetch tap read key lengths, kafka-go's reader turned the empty key into a
// null one at the first hop.
func TestIntegrationEmptyAndNullKeysSurviveEveryHop(t *testing.T) {
	for _, codec := range []kafkago.Compression{0, kafkago.Lz4, kafkago.Zstd} {
		t.Run(codec.String(), func(t *testing.T) { testKeysSurviveEveryHop(t, codec) })
	}
}

func testKeysSurviveEveryHop(t *testing.T, codec kafkago.Compression) {
	topic, group := uniq("it-keys"), uniq("g")
	tiers := WithRetryTiers(time.Second)
	tr := itTransport(t, WithGroupID(group), tiers)
	ensure(t, tr, topic, 1)
	keys := map[string][]byte{"null": nil, "empty": {}, "set": []byte("k-1")}
	var msgs []kafkago.Message
	for _, name := range []string{"null", "empty", "set"} {
		body := strings.Replace(envelope(t, 0), "trace-1", name, 1)
		hs, _ := projection(body, time.Now())
		msgs = append(msgs, kafkago.Message{Topic: topic, Key: keys[name], Value: []byte(body), Headers: toKafkaHeaders(hs)})
	}
	w := &kafkago.Writer{Addr: kafkago.TCP(brokerList(t)...), BatchTimeout: time.Millisecond, BatchSize: len(msgs),
		RequiredAcks: kafkago.RequireAll, Compression: codec, Transport: &kafkago.Transport{}}
	if err := w.WriteMessages(bgCtx(t, 30*time.Second), msgs...); err != nil {
		t.Fatal(err)
	}
	_ = w.Close()
	check := func(hop string, got map[string][]byte) {
		t.Helper()
		for name, want := range keys {
			k, ok := got[name]
			if !ok {
				t.Errorf("%s: no record of %s", hop, name)
				continue
			}
			if (k == nil) != (want == nil) || !bytes.Equal(k, want) {
				t.Errorf("%s: %s key %#v, want %#v", hop, name, k, want)
			}
		}
	}
	check("work topic (raw producer)", keysByTrace(t, topic, 3, func(r rawRecord) bool { return r.Headers[wire.HeaderAttempts] == "0" }))

	runReinjector(t, topic, tiers)
	var handled atomic.Int32
	app, err := babelqueue.NewApp(tr, quiet, babelqueue.WithMaxAttempts(2), babelqueue.WithPollTimeout(200*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	app.Handle("urn:babel:orders:created", func(context.Context, *babelqueue.Envelope) error {
		handled.Add(1)
		return errors.New("always fails")
	})
	actx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- app.Consume(actx, topic) }()
	check("retry tier", keysByTrace(t, RetryTopic(topic, 1), 3, func(rawRecord) bool { return true }))
	check("re-injected", keysByTrace(t, topic, 3, func(r rawRecord) bool { return r.Headers[wire.HeaderAttempts] == "1" }))
	check("dead letter", keysByTrace(t, topic+".dlq", 3, func(rawRecord) bool { return true }))
	stop()
	if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
		t.Fatalf("Consume: %v", err)
	}
	if n := handled.Load(); n != 6 {
		t.Errorf("handler ran %d times, want 6 (2 attempts of 3 records)", n)
	}

	rd := itTransport(t, WithGroupID(uniq("redrive")))
	res, err := redrive.Run(bgCtx(t, 60*time.Second), rd, topic+".dlq", redrive.WithPollTimeout(2*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if res.Moved != 3 {
		t.Fatalf("redrive %+v", res)
	}
	check("redriven", keysByTrace(t, topic, 3, func(r rawRecord) bool {
		_, redriven := r.Headers[wire.HeaderRedriveCount]
		return redriven
	}))
}

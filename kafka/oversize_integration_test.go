//go:build integration

package kafka

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	kafkago "github.com/segmentio/kafka-go"

	babelqueue "github.com/babelqueue/babelqueue-go/core"
	"github.com/babelqueue/babelqueue-go/core/bqtest"
)

// TestIntegrationOversizeDeadLetterDoesNotStopThePartition: a raw producer
// writes a 900,000-byte value that is not UTF-8, then a valid envelope, to
// one partition. The poison dead letter (base64, 1.2 MB) is above the
// broker's limit: before the oversize rule the write failed with Message
// Size Too Large on every redelivery, the valid record was never handled
// and nothing was committed. Now a bounded dead letter with the documented
// fields is written, both records are committed, the valid one is handled,
// the refusal is reported, and the original stays in its topic. "broker":
// the writer's batch bytes admit the record and the broker refuses it;
// "client": kafka-go's own size check refuses it.
func TestIntegrationOversizeDeadLetterDoesNotStopThePartition(t *testing.T) {
	for name, opts := range map[string][]Option{
		"broker": {WithBatchBytes(8 << 20)},
		"client": nil,
	} {
		t.Run(name, func(t *testing.T) {
			topic, group := uniq("it-oversize"), uniq("g")
			tr := itTransport(t, append([]Option{WithGroupID(group)}, opts...)...)
			ensure(t, tr, topic, 1)
			produceRaw(t,
				kafkago.Message{Topic: topic, Key: []byte("k-big"), Value: []byte(strings.Repeat("\xff", 900_000)),
					Headers: []kafkago.Header{{Key: "bq-job", Value: []byte("urn:babel:orders:created")}, {Key: "bq-message-id", Value: []byte("id-big")}}},
				kafkago.Message{Topic: topic, Key: []byte("k-ok"), Value: []byte(envelope(t, 0)), Headers: contractHeaders("0")},
			)
			var handled atomic.Int32
			var mu sync.Mutex
			var reported []error
			settled := &settleLog{}
			app, err := babelqueue.NewApp(tr, quiet, babelqueue.WithPollTimeout(200*time.Millisecond), babelqueue.WithHooks(settled),
				babelqueue.WithOnError(func(err error) { mu.Lock(); reported = append(reported, err); mu.Unlock() }))
			if err != nil {
				t.Fatal(err)
			}
			app.Handle("urn:babel:orders:created", func(context.Context, *babelqueue.Envelope) error { handled.Add(1); return nil })
			runApp(t, app, topic)
			deadline := time.Now().Add(60 * time.Second)
			for handled.Load() < 1 || committedTotal(t, group, topic, 1) != 2 {
				if time.Now().After(deadline) {
					t.Fatalf("handled %d, committed %d: the partition is stopped behind the oversize record",
						handled.Load(), committedTotal(t, group, topic, 1))
				}
				time.Sleep(100 * time.Millisecond)
			}
			dlq := readTopic(t, topic+".dlq", 1, 30*time.Second, time.Second)
			if len(dlq) != 1 {
				t.Fatalf("dlq holds %d records, want 1", len(dlq))
			}
			d := dlq[0]
			b := bqtest.DecodeBoundedLetter(t, d.Value)
			o := b.Oversize
			if len(d.Value) > 8<<10 || b.Job != "urn:babel:orders:created" || b.Meta.ID != "id-big" || o.Reason != "poison" ||
				o.Size != 900_000 || o.RefusedSize < 1_200_000 || o.Topic != topic || o.Partition == nil || *o.Partition != 0 ||
				o.Offset == nil || *o.Offset != 0 || !strings.Contains(o.WriteError, "too large") {
				t.Errorf("bounded dead letter (%d bytes): %s", len(d.Value), d.Value)
			}
			if name == "broker" && !strings.Contains(o.WriteError, "Message Size Too Large") {
				t.Errorf("write_error %q: want the broker's refusal", o.WriteError)
			}
			if b.DeadLetter.Reason != "oversize" || b.DeadLetter.Error == nil || !strings.Contains(*b.DeadLetter.Error, "poison") ||
				b.DeadLetter.OriginalQueue != topic || b.DeadLetter.Attempts != 1 {
				t.Errorf("dead_letter %+v", b.DeadLetter)
			}
			if string(d.Key) != "k-big" {
				t.Errorf("key %q, want k-big", d.Key)
			}
			mu.Lock()
			var loud bool
			for _, e := range reported {
				loud = loud || errors.Is(e, babelqueue.ErrTooLarge)
			}
			mu.Unlock()
			settled.mu.Lock()
			var st bool
			for _, s := range settled.all {
				st = st || (s.Reason == "oversize" && s.Outcome == babelqueue.OutcomeDeadLettered)
			}
			settled.mu.Unlock()
			if !loud || !st {
				t.Errorf("reported through OnError %v, settled as oversize %v", loud, st)
			}
			// The original stays in its topic, byte for byte.
			orig := readTopic(t, topic, 2, 30*time.Second, 0)
			if len(orig) != 2 || orig[0].Offset != 0 || len(orig[0].Value) != 900_000 {
				t.Fatalf("work topic holds %d records", len(orig))
			}
		})
	}
}

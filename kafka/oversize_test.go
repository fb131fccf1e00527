package kafka

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	kafkago "github.com/segmentio/kafka-go"

	babelqueue "github.com/babelqueue/babelqueue-go/core"
)

// TestAppOversizeDeadLetterDoesNotStopThePartition runs an App over the
// transport with a writer that refuses records above 1,000 bytes (the
// broker's MessageSizeTooLarge, or kafka-go's own check): the poison record
// whose dead letter is refused is dead-lettered bounded, the record behind
// it is handled, and the partition is committed past both. A transient
// refusal is not taken for a size one: it is handed back and written once
// the broker recovers.
func TestAppOversizeDeadLetterDoesNotStopThePartition(t *testing.T) {
	for name, refusal := range map[string]func(kafkago.Message) error{
		"broker":      func(kafkago.Message) error { return kafkago.WriteErrors{kafkago.MessageSizeTooLarge} },
		"client":      func(m kafkago.Message) error { return kafkago.MessageTooLargeError{Message: m} },
		"record list": func(kafkago.Message) error { return kafkago.RecordListTooLarge },
	} {
		t.Run(name, func(t *testing.T) {
			rg := newRig(t, WithMaxWaitTime(20*time.Millisecond))
			rg.writer.setFail(func(msgs []kafkago.Message) error {
				if len(msgs[0].Value) > 1000 {
					return refusal(msgs[0])
				}
				return nil
			})
			settled := &settleLog{}
			var reported []error
			app, err := babelqueue.NewApp(rg.tr, babelqueue.WithPollTimeout(20*time.Millisecond), babelqueue.WithHooks(settled),
				babelqueue.WithOnError(func(err error) { reported = append(reported, err) }),
				babelqueue.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
			if err != nil {
				t.Fatal(err)
			}
			handled := 0
			app.Handle("urn:babel:orders:created", func(context.Context, *babelqueue.Envelope) error { handled++; return nil })
			rg.log.append("orders", 0, kafkago.Message{Key: []byte("k"), Value: []byte(strings.Repeat("\xff", 900)), Headers: []kafkago.Header{h("bq-job", "urn:babel:orders:created")}})
			rg.log.append("orders", 0, kafkago.Message{Value: []byte(envelope(t, 0)), Headers: contractHeaders("0")})
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			if _, err := app.Drain(ctx, "orders"); err != nil {
				t.Fatal(err)
			}
			if handled != 1 {
				t.Fatalf("the record behind the oversize one was handled %d times", handled)
			}
			if c := rg.offsets.get("orders", 0); c != 2 {
				t.Fatalf("committed next offset %d, want 2", c)
			}
			dlq := rg.log.records("orders.dlq")
			if len(dlq) != 1 {
				t.Fatalf("dlq holds %d records", len(dlq))
			}
			var b struct {
				Job      string
				Oversize struct {
					Reason, Topic           string
					Size, Partition, Offset int64
				}
				DeadLetter struct{ Reason string } `json:"dead_letter"`
			}
			if err := json.Unmarshal(dlq[0].Value, &b); err != nil {
				t.Fatal(err)
			}
			if b.Job != "urn:babel:orders:created" || b.Oversize.Reason != "poison" || b.Oversize.Topic != "orders" || b.Oversize.Offset != 0 ||
				b.Oversize.Size != 900 || b.DeadLetter.Reason != "oversize" || string(dlq[0].Key) != "k" {
				t.Errorf("bounded dead letter %s key %q", dlq[0].Value, dlq[0].Key)
			}
			var oversize bool
			for _, s := range settled.all {
				oversize = oversize || (s.Reason == "oversize" && s.Outcome == babelqueue.OutcomeDeadLettered)
			}
			if !oversize || len(reported) == 0 || !errors.Is(reported[len(reported)-1], babelqueue.ErrTooLarge) {
				t.Errorf("settlements %+v, reported %v", settled.all, reported)
			}
		})
	}
}

// TestTransientRefusalIsNotOversize: a refusal that is not about size
// (here one the writer gave up on) hands the record back: nothing is
// committed and no bounded dead letter is written; once the broker
// recovers the full dead letter is.
func TestTransientRefusalIsNotOversize(t *testing.T) {
	rg := newRig(t, WithMaxWaitTime(20*time.Millisecond))
	broken := true
	rg.writer.setFail(func(msgs []kafkago.Message) error {
		if msgs[0].Topic == "orders.dlq" && broken {
			return kafkago.NotEnoughReplicas
		}
		return nil
	})
	app, err := babelqueue.NewApp(rg.tr, babelqueue.WithPollTimeout(20*time.Millisecond), babelqueue.WithSettleTimeout(time.Second),
		babelqueue.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	if err != nil {
		t.Fatal(err)
	}
	rg.log.append("orders", 0, kafkago.Message{Value: []byte(strings.Repeat("\xff", 900))})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := app.Drain(ctx, "orders"); !errors.Is(err, babelqueue.ErrSettle) || errors.Is(err, babelqueue.ErrTooLarge) {
		t.Fatalf("Drain = %v, want a settle failure that is not oversize", err)
	}
	if n := len(rg.log.records("orders.dlq")); n != 0 || rg.offsets.get("orders", 0) > 0 {
		t.Fatalf("dlq %d records, committed %d: want nothing", n, rg.offsets.get("orders", 0))
	}
	broken = false
	if _, err := app.Drain(ctx, "orders"); err != nil {
		t.Fatal(err)
	}
	dlq := rg.log.records("orders.dlq")
	if len(dlq) != 1 || !strings.Contains(string(dlq[0].Value), `"raw_encoding":"base64"`) || strings.Contains(string(dlq[0].Value), `"oversize"`) {
		t.Fatalf("dlq %d records: want the full poison dead letter", len(dlq))
	}
	if c := rg.offsets.get("orders", 0); c != 1 {
		t.Fatalf("committed %d", c)
	}
}

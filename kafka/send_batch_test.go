package kafka

import (
	"context"
	"errors"
	"io"
	"sync/atomic"
	"testing"
	"time"

	kafkago "github.com/segmentio/kafka-go"

	babelqueue "github.com/babelqueue/babelqueue-go/core"
	"github.com/babelqueue/babelqueue-go/core/driver"
	"github.com/babelqueue/babelqueue-go/core/wire"
)

func TestSendBatchWritesEveryRecordInOneCall(t *testing.T) {
	rg := newRig(t, WithRetryTiers(time.Second))
	ctx := context.Background()
	outs := []*driver.Outgoing{
		{Intent: driver.IntentPublish, Queue: "orders", Body: envelope(t, 0), Key: []byte("k1"), Headers: map[string]string{"x-tenant": "t1"}},
		{Intent: driver.IntentPublish, Queue: "orders", Body: envelope(t, 0)},
		{Intent: driver.IntentPublish, Queue: "orders", Body: envelope(t, 0), Delay: time.Second},
	}
	rs, err := rg.tr.SendBatch(ctx, outs)
	if err != nil {
		t.Fatal(err)
	}
	if len(rg.writer.calls) != 1 || rg.writer.calls[0] != 3 {
		t.Fatalf("writer calls %v; want one call of 3 records", rg.writer.calls)
	}
	if len(rs) != 3 || rs[2].Queue != RetryTopic("orders", 1) || rs[2].Delay != time.Second || rs[0].Queue != "" {
		t.Fatalf("receipts %+v", rs)
	}
	recs := rg.log.records("orders")
	if len(recs) != 2 {
		t.Fatalf("%d records in orders; want 2", len(recs))
	}
	var keyed *kafkago.Message
	for i := range recs {
		if string(recs[i].Key) == "k1" {
			keyed = &recs[i]
		}
	}
	if keyed == nil {
		t.Fatal("the keyed record lost its key")
	}
	hs := map[string]string{}
	for _, h := range keyed.Headers {
		hs[h.Key] = string(h.Value)
	}
	if hs["x-tenant"] != "t1" || hs[wire.HeaderJob] == "" || hs[wire.HeaderMessageID] == "" {
		t.Errorf("headers %v; want the projection and the extra header", hs)
	}
	if n := len(rg.log.records(RetryTopic("orders", 1))); n != 1 {
		t.Errorf("%d delayed records; want 1 in the tier", n)
	}
}

func TestSendBatchRefusesBeforeWriting(t *testing.T) {
	rg := newRig(t)
	outs := []*driver.Outgoing{
		{Intent: driver.IntentPublish, Queue: "orders", Body: "a"},
		{Intent: driver.IntentPublish, Queue: " ", Body: "b"},
	}
	if _, err := rg.tr.SendBatch(context.Background(), outs); !errors.Is(err, ErrEmptyTopic) {
		t.Fatalf("err %v; want ErrEmptyTopic", err)
	}
	outs[1] = &driver.Outgoing{Intent: driver.IntentPublish, Queue: "orders", Body: "b", Delay: time.Second}
	if _, err := rg.tr.SendBatch(context.Background(), outs); !errors.Is(err, ErrDelayUnsupported) {
		t.Fatalf("err %v; want ErrDelayUnsupported (no tiers)", err)
	}
	if len(rg.writer.calls) != 0 {
		t.Fatalf("writer calls %v; want none", rg.writer.calls)
	}
}

func TestSendBatchReportsMixedOutcomesWithoutRetrying(t *testing.T) {
	rg := newRig(t)
	calls := 0
	rg.writer.setFail(func([]kafkago.Message) error {
		calls++
		return kafkago.WriteErrors{nil, kafkago.NotLeaderForPartition, io.ErrUnexpectedEOF}
	})
	outs := []*driver.Outgoing{
		{Intent: driver.IntentPublish, Queue: "orders", Body: "a"},
		{Intent: driver.IntentPublish, Queue: "orders", Body: "b"},
		{Intent: driver.IntentPublish, Queue: "orders", Body: "c"},
	}
	_, err := rg.tr.SendBatch(context.Background(), outs)
	var each driver.SendErrors
	if !errors.As(err, &each) || len(each) != 3 {
		t.Fatalf("err %v; want SendErrors of 3", err)
	}
	if each[0] != nil || errors.Is(each[1], babelqueue.ErrPublishUnknown) || !errors.Is(each[2], babelqueue.ErrPublishUnknown) {
		t.Errorf("entries %v; want written, refused, unknown", each)
	}
	if calls != 1 {
		t.Errorf("%d write attempts; a partly written batch must not be written again", calls)
	}
}

func TestSendBatchRetriesAWholeRefusal(t *testing.T) {
	rg := newRig(t)
	var calls atomic.Int32
	rg.writer.setFail(func([]kafkago.Message) error {
		if calls.Add(1) == 1 {
			return kafkago.WriteErrors{kafkago.NotLeaderForPartition, kafkago.NotLeaderForPartition}
		}
		return nil
	})
	go func() { // let the backoff pass on the fake clock
		for calls.Load() < 2 {
			rg.clock.Advance(writeBackoffMax)
			time.Sleep(time.Millisecond)
		}
	}()
	outs := []*driver.Outgoing{
		{Intent: driver.IntentPublish, Queue: "orders", Body: "a"},
		{Intent: driver.IntentPublish, Queue: "orders", Body: "b"},
	}
	if _, err := rg.tr.SendBatch(context.Background(), outs); err != nil {
		t.Fatal(err)
	}
	if n := len(rg.log.records("orders")); n != 2 {
		t.Fatalf("%d records; want 2, each once", n)
	}
}

func TestAppPublishBatchThroughKafka(t *testing.T) {
	rg := newRig(t)
	app, err := babelqueue.NewApp(rg.tr, babelqueue.WithDefaultQueue("orders"))
	if err != nil {
		t.Fatal(err)
	}
	msgs := make([]babelqueue.BatchMessage, 10)
	for i := range msgs {
		msgs[i] = babelqueue.BatchMessage{URN: "urn:babel:orders:created", Data: map[string]int{"n": i},
			Options: []babelqueue.PublishOption{babelqueue.WithKey([]byte{byte('a' + i)})}}
	}
	ids, err := app.PublishBatch(context.Background(), msgs)
	if err != nil || len(ids) != 10 {
		t.Fatalf("publish = %v, %v", ids, err)
	}
	if len(rg.writer.calls) != 1 || rg.writer.calls[0] != 10 {
		t.Fatalf("writer calls %v; want one of 10", rg.writer.calls)
	}
	if n := len(rg.log.records("orders")); n != 10 {
		t.Fatalf("%d records", n)
	}
}

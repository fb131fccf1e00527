//go:build integration

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/babelqueue/babelqueue-go/brokertest"
)

// bq lag --share shows a share group's state: after 2 of 5 records were
// accepted, the partition has 3 unsettled and a start offset of at most 2
// (the broker persists it lazily), and the consuming member is counted.
func TestShareLag(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	brokers := brokertest.KafkaBrokers(t)
	topic := fmt.Sprintf("bq-share-lag-%d", time.Now().UnixNano())
	group := "g-" + topic
	admin, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	ct := kmsg.NewPtrCreateTopicsRequest()
	tp := kmsg.NewCreateTopicsRequestTopic()
	tp.Topic, tp.NumPartitions, tp.ReplicationFactor = topic, 1, 1
	ct.Topics = append(ct.Topics, tp)
	if _, err := ct.RequestWith(ctx, admin); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 5; i++ {
		if err := admin.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte(fmt.Sprint(i))}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	res := kmsg.NewIncrementalAlterConfigsRequestResource()
	res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeGroupConfig, group
	c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
	c.Name, c.Value = "share.auto.offset.reset", kmsg.StringPtr("earliest")
	res.Configs = append(res.Configs, c)
	req.Resources = append(req.Resources, res)
	if _, err := req.RequestWith(ctx, admin); err != nil {
		t.Fatal(err)
	}
	sc, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.ShareGroup(group), kgo.ConsumeTopics(topic),
		kgo.ShareMaxRecords(2), kgo.ShareMaxRecordsStrict())
	if err != nil {
		t.Fatal(err)
	}
	defer sc.Close()
	got := 0
	for got < 2 && ctx.Err() == nil {
		sc.PollRecords(ctx, 2-got).EachRecord(func(r *kgo.Record) { got++; r.Ack(kgo.AckAccept) })
	}
	if err := sc.FlushAcks(ctx); err != nil {
		t.Fatal(err)
	}
	var st shareState
	deadline := time.Now().Add(20 * time.Second)
	for {
		out := mustBQ(t, ctx, "lag", "-b", brokers[0], "--share", "-g", group, "-t", topic, "--json")
		if err := json.Unmarshal([]byte(out), &st); err != nil {
			t.Fatalf("bq lag --share --json: %v\n%s", err, out)
		}
		if len(st.Rows) == 1 && st.Rows[0].Lag == 3 || time.Now().After(deadline) {
			break
		}
		time.Sleep(500 * time.Millisecond)
	}
	if len(st.Rows) != 1 || st.Rows[0].StartOffset < 0 || st.Rows[0].StartOffset > 2 || st.Rows[0].Lag != 3 || st.Members != 1 || st.State == "" {
		t.Errorf("share state = %+v, want one partition, start at most 2, lag 3, one member", st)
	}
	text := mustBQ(t, ctx, "lag", "-b", brokers[0], "--share", "-g", group, "-t", topic)
	t.Logf("bq lag --share:\n%s", text)
}

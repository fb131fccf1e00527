//go:build integration

package pulsar

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	"github.com/babelqueue/babelqueue-go/brokertest"

	babelqueue "github.com/babelqueue/babelqueue-go/core"
)

// updatePartitions raises the partition count of topic, in public/default,
// through the broker's admin API.
func updatePartitions(t *testing.T, topic string, partitions int) {
	t.Helper()
	u := brokertest.PulsarAdminURL(t) + "/admin/v2/persistent/public/default/" + topic + "/partitions"
	req, err := http.NewRequest(http.MethodPost, u, strings.NewReader(strconv.Itoa(partitions)))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("update partitions of %s: %v", topic, err)
	}
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		t.Fatalf("update partitions of %s to %d: %s", topic, partitions, resp.Status)
	}
}

// A partition added to a topic after a Failover Consumer subscribed a
// consumer per partition is subscribed within the discovery period
// (ConsumerOptions.AutoDiscoveryPeriod), and the message published to it
// is handled.
func TestIntegrationFailoverConsumesPartitionAddedAfterSubscribe(t *testing.T) {
	const before, after = 2, 3
	q := uniqueQueue(t)
	brokertest.PulsarPartitionedTopic(t, q, before)
	tr := newIntegrationTransport(t, WithSubscriptionType(pulsar.Failover), WithRepublishRetries(),
		WithMaxWaitTime(200*time.Millisecond),
		WithConsumerOptions(func(o *pulsar.ConsumerOptions) { o.AutoDiscoveryPeriod = 500 * time.Millisecond }))
	if _, err := tr.consumerFor(q); err != nil {
		t.Fatal(err)
	}
	if n := len(tr.consumers[q].c.(*partitionConsumers).list()); n != before {
		t.Fatalf("%d partition consumers, want %d", n, before)
	}

	got := make(chan *babelqueue.Envelope, 1)
	c := NewConsumer(tr, q, map[string]babelqueue.Handler{
		"urn:babel:orders:created": func(ctx context.Context, env *babelqueue.Envelope) error {
			got <- env
			return nil
		},
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	defer func() { cancel(); <-done }()

	updatePartitions(t, q, after)
	body := strings.Replace(envelope, `"id":"m-1"`, `"id":"added-partition"`, 1)
	rawSend(t, rawClient(t), "persistent://public/default/"+q+"-partition-2", &pulsar.ProducerMessage{
		Payload:    []byte(body),
		Properties: map[string]string{"bq-job": "urn:babel:orders:created"},
	})
	select {
	case env := <-got:
		if env.Meta.ID != "added-partition" {
			t.Errorf("handled %q, want the message of the added partition", env.Meta.ID)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the message of the partition added after subscribing was never handled")
	}
	if n := len(tr.consumers[q].c.(*partitionConsumers).list()); n != after {
		t.Errorf("%d partition consumers after discovery, want %d", n, after)
	}
}

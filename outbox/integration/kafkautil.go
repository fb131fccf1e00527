package integration

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"time"

	kafkago "github.com/segmentio/kafka-go"
)

// CreateTopic creates a topic of one partition on the cluster at broker.
func CreateTopic(broker, topic string) error {
	conn, err := kafkago.Dial("tcp", broker)
	if err != nil {
		return fmt.Errorf("dial %s: %w", broker, err)
	}
	defer conn.Close()
	ctrl, err := conn.Controller()
	if err != nil {
		return fmt.Errorf("controller: %w", err)
	}
	cc, err := kafkago.Dial("tcp", net.JoinHostPort(ctrl.Host, strconv.Itoa(ctrl.Port)))
	if err != nil {
		return fmt.Errorf("dial controller: %w", err)
	}
	defer cc.Close()
	return cc.CreateTopics(kafkago.TopicConfig{Topic: topic, NumPartitions: 1, ReplicationFactor: 1})
}

// ReadAll reads partition 0 of topic from the start until idle passes
// without a record or max records were read, and returns the values in
// partition order.
func ReadAll(ctx context.Context, broker, topic string, max int, idle time.Duration) ([][]byte, error) {
	r := kafkago.NewReader(kafkago.ReaderConfig{Brokers: []string{broker}, Topic: topic, Partition: 0, MinBytes: 1, MaxBytes: 10 << 20, MaxWait: 200 * time.Millisecond})
	defer r.Close()
	var out [][]byte
	for len(out) < max {
		rctx, cancel := context.WithTimeout(ctx, idle)
		m, err := r.ReadMessage(rctx)
		cancel()
		if err != nil {
			if ctx.Err() == nil && rctx.Err() != nil {
				return out, nil
			}
			return out, err
		}
		out = append(out, m.Value)
	}
	return out, nil
}

package kafka

import (
	"context"
	"errors"
	"fmt"
	"time"

	kafkago "github.com/segmentio/kafka-go"

	babelqueue "github.com/babelqueue/babelqueue-go/core"
	"github.com/babelqueue/babelqueue-go/core/driver"
)

// DeadLetterSuffix names the dead-letter topic of a work topic:
// "<topic>.dlq", the App's default: driver.DefaultDeadLetterSuffix, the
// one suffix of the project.
const DeadLetterSuffix = driver.DefaultDeadLetterSuffix

// EnsureTopics creates, when missing, everything a work topic needs: the
// topic, one retry topic per configured tier, and the dead-letter topic
// "<topic>.dlq". The work topic gets partitions partitions. Each retry
// topic (RetryTopic(topic, n)) is created with message.timestamp.type =
// LogAppendTime, so re-inject waits are anchored on the broker's clock.
// Retry and dead-letter topics get the partition count the work topic
// really has (it may already exist with another count). It is idempotent:
// topics that exist are left as they are. replicationFactor must be
// positive (1 for a single broker).
func (t *Transport) EnsureTopics(ctx context.Context, topic string, partitions, replicationFactor int) error {
	if isBlank(topic) {
		return ErrEmptyTopic
	}
	if partitions <= 0 || replicationFactor <= 0 {
		return fmt.Errorf("kafka: ensure topics of %q: %w: partitions %d and replication factor %d must be positive",
			topic, babelqueue.ErrInvalidOption, partitions, replicationFactor)
	}
	if t.net == nil {
		return ErrNoBrokers
	}
	client := &kafkago.Client{Addr: kafkago.TCP(t.cfg.brokers...), Transport: t.net}
	if err := createTopics(ctx, client, kafkago.TopicConfig{Topic: topic, NumPartitions: partitions, ReplicationFactor: replicationFactor}); err != nil {
		if errors.Is(err, kafkago.BrokerNotAvailable) {
			// kafka-go's client says this of any failed connection.
			if why := t.checkConnection(ctx); why != nil {
				return fmt.Errorf("kafka: ensure topics of %q: %w", topic, why)
			}
		}
		return err
	}
	actual, err := partitionCount(ctx, client, topic)
	if err != nil {
		return err
	}
	specs := make([]kafkago.TopicConfig, 0, len(t.cfg.tiers)+1)
	for n := range t.cfg.tiers {
		specs = append(specs, kafkago.TopicConfig{
			Topic:             RetryTopic(topic, n+1),
			NumPartitions:     actual,
			ReplicationFactor: replicationFactor,
			ConfigEntries:     []kafkago.ConfigEntry{{ConfigName: "message.timestamp.type", ConfigValue: "LogAppendTime"}},
		})
	}
	specs = append(specs, kafkago.TopicConfig{Topic: topic + DeadLetterSuffix, NumPartitions: actual, ReplicationFactor: replicationFactor})
	return createTopics(ctx, client, specs...)
}

func createTopics(ctx context.Context, client *kafkago.Client, specs ...kafkago.TopicConfig) error {
	res, err := client.CreateTopics(ctx, &kafkago.CreateTopicsRequest{Topics: specs})
	if err != nil {
		return wrapf(err, "create topics")
	}
	for _, s := range specs {
		if e := res.Errors[s.Topic]; e != nil && !errors.Is(e, kafkago.TopicAlreadyExists) {
			return wrapf(e, "create topic %q", s.Topic)
		}
	}
	return nil
}

// partitionCount reads the partition count of topic, waiting (within ctx,
// at most 30s) for a topic that was just created to show up in the
// metadata.
func partitionCount(ctx context.Context, client *kafkago.Client, topic string) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	for {
		meta, err := client.Metadata(ctx, &kafkago.MetadataRequest{Topics: []string{topic}})
		if err == nil {
			for _, tp := range meta.Topics {
				if tp.Name != topic {
					continue
				}
				switch {
				case tp.Error == nil && len(tp.Partitions) > 0:
					return len(tp.Partitions), nil
				case tp.Error != nil && !errors.Is(tp.Error, kafkago.UnknownTopicOrPartition) && !errors.Is(tp.Error, kafkago.LeaderNotAvailable):
					return 0, wrapf(tp.Error, "read partitions of %q", topic)
				}
			}
		}
		select {
		case <-ctx.Done():
			if err == nil {
				err = ctx.Err()
			}
			return 0, wrapf(err, "read partitions of %q", topic)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

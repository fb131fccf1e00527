package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"time"

	kafkago "github.com/segmentio/kafka-go"

	"github.com/babelqueue/babelqueue-go/chaos"
	babelqueue "github.com/babelqueue/babelqueue-go/core"
	"github.com/babelqueue/babelqueue-go/core/wire"
	"github.com/babelqueue/babelqueue-go/kafka"
)

// kafkaBrokers returns BQ_KAFKA_BROKERS as a list.
func kafkaBrokers() []string {
	var out []string
	for _, b := range strings.Split(os.Getenv("BQ_KAFKA_BROKERS"), ",") {
		if b = strings.TrimSpace(b); b != "" {
			out = append(out, b)
		}
	}
	return out
}

// kafkaSide is the Kafka half of the driver.
type kafkaSide struct {
	topic, group, reinjectGroup string
	partitions                  int
	bq                          string // the bq binary
	tr                          *kafka.Transport
	client                      *kafkago.Client
	log                         *slog.Logger
}

func newKafkaSide(run string, partitions int, bq string, log *slog.Logger) (*kafkaSide, error) {
	brokers := kafkaBrokers()
	if len(brokers) == 0 {
		return nil, errors.New("BQ_KAFKA_BROKERS is not set")
	}
	tr, err := kafka.New(kafka.WithBrokers(brokers...), kafka.WithRetryTiers(tiers...), kafka.WithLogger(log))
	if err != nil {
		return nil, fmt.Errorf("kafka transport: %w", err)
	}
	topic := "chaos-" + run
	return &kafkaSide{topic: topic, group: topic + "-work", reinjectGroup: topic + "-reinject", partitions: partitions,
		bq: bq, tr: tr, client: &kafkago.Client{Addr: kafkago.TCP(brokers...), Timeout: 10 * time.Second}, log: log}, nil
}

func (k *kafkaSide) name() string                    { return "kafka" }
func (k *kafkaSide) transport() babelqueue.Transport { return k.tr }
func (k *kafkaSide) workTopic() string               { return k.topic }
func (k *kafkaSide) close()                          { _ = k.tr.Close() }

func (k *kafkaSide) provision(ctx context.Context) error {
	return untilAccepted(ctx, k.log, "ensure topics "+k.topic, setupLimit, func() error {
		return k.tr.EnsureTopics(ctx, k.topic, k.partitions, 1)
	})
}

func (k *kafkaSide) consumerArgs(self, dir, proc string, work time.Duration, concurrency int) []string {
	return []string{self, "consumer", "-broker", "kafka", "-topic", k.topic, "-group", k.group,
		"-dir", dir, "-proc", proc, "-work", work.String(), "-concurrency", strconv.Itoa(concurrency)}
}

// helpers is the re-injector, as `bq reinject`.
func (k *kafkaSide) helpers() map[string]func(proc string) []string {
	ts := make([]string, len(tiers))
	for i, t := range tiers {
		ts[i] = t.String()
	}
	return map[string]func(string) []string{"reinjector": func(string) []string {
		return []string{k.bq, "reinject", "--broker", "kafka://" + strings.Join(kafkaBrokers(), ","), "--topic", k.topic,
			"--tiers", strings.Join(ts, ","), "--group", k.reinjectGroup, "--http", ""}
	}}
}

func (k *kafkaSide) tierTopics() []string {
	out := make([]string, len(tiers))
	for i := range tiers {
		out[i] = kafka.RetryTopic(k.topic, i+1)
	}
	return out
}

func (k *kafkaSide) dlq() string { return k.topic + kafka.DeadLetterSuffix }

// lag is what the work group has not committed on the work topic plus what
// the re-injector's group has not committed on the tiers.
func (k *kafkaSide) lag(ctx context.Context) (int64, error) {
	a, err := k.groupLag(ctx, k.group, []string{k.topic})
	if err != nil {
		return 0, err
	}
	b, err := k.groupLag(ctx, k.reinjectGroup, k.tierTopics())
	if err != nil {
		return 0, err
	}
	return a + b, nil
}

func (k *kafkaSide) groupLag(ctx context.Context, group string, topics []string) (int64, error) {
	req := &kafkago.OffsetFetchRequest{GroupID: group, Topics: map[string][]int{}}
	list := &kafkago.ListOffsetsRequest{Topics: map[string][]kafkago.OffsetRequest{}}
	for _, t := range topics {
		for p := range k.partitions {
			req.Topics[t] = append(req.Topics[t], p)
			list.Topics[t] = append(list.Topics[t], kafkago.LastOffsetOf(p))
		}
	}
	committed, err := kafka.FetchOffsets(ctx, k.client, req)
	if err != nil {
		return 0, fmt.Errorf("offsets of group %s: %w", group, err)
	}
	ends, err := k.client.ListOffsets(ctx, list)
	if err != nil {
		return 0, fmt.Errorf("list offsets: %w", err)
	}
	at := map[string]int64{}
	for t, ps := range committed.Topics {
		for _, p := range ps {
			if p.Error != nil {
				return 0, fmt.Errorf("offset of group %s on %s/%d: %w", group, t, p.Partition, p.Error)
			}
			at[t+"/"+strconv.Itoa(p.Partition)] = max(p.CommittedOffset, 0)
		}
	}
	var total int64
	for t, ps := range ends.Topics {
		for _, p := range ps {
			if p.Error != nil {
				return 0, fmt.Errorf("end of %s/%d: %w", t, p.Partition, p.Error)
			}
			total += max(p.LastOffset-at[t+"/"+strconv.Itoa(p.Partition)], 0)
		}
	}
	return total, nil
}

// deadLetterCount is the number of records in the DLQ (its end offsets).
func (k *kafkaSide) deadLetterCount(ctx context.Context) (int, error) {
	list := &kafkago.ListOffsetsRequest{Topics: map[string][]kafkago.OffsetRequest{}}
	for p := range k.partitions {
		list.Topics[k.dlq()] = append(list.Topics[k.dlq()], kafkago.LastOffsetOf(p))
	}
	ends, err := k.client.ListOffsets(ctx, list)
	if err != nil {
		return 0, fmt.Errorf("list offsets of %s: %w", k.dlq(), err)
	}
	n := 0
	for _, ps := range ends.Topics {
		for _, p := range ps {
			if p.Error != nil {
				return 0, fmt.Errorf("end of %s/%d: %w", k.dlq(), p.Partition, p.Error)
			}
			n += int(p.LastOffset)
		}
	}
	return n, nil
}

// readBack reads the work topic (for the re-injected copies), the tiers
// (counted) and the DLQ.
func (k *kafkaSide) readBack(ctx context.Context) (chaos.ReadBack, map[string]int, error) {
	var rb chaos.ReadBack
	stats := map[string]int{}
	work, err := k.readTopic(ctx, k.topic)
	if err != nil {
		return rb, nil, err
	}
	originals := map[string]int{}
	for _, m := range work {
		c := copyOf(m)
		if c.Attempts > 0 {
			rb.Reinjected = append(rb.Reinjected, c)
		} else {
			originals[c.ID]++
		}
	}
	stats["work_records"] = len(work)
	stats["reinjected_records"] = len(rb.Reinjected)
	for id, n := range originals {
		if n > 1 {
			stats["original_written_twice"] += n - 1
		}
		_ = id
	}
	for _, t := range k.tierTopics() {
		ms, err := k.readTopic(ctx, t)
		if err != nil {
			return rb, nil, err
		}
		stats["tier_records"] += len(ms)
	}
	dl, err := k.readTopic(ctx, k.dlq())
	if err != nil {
		return rb, nil, err
	}
	for _, m := range dl {
		rb.DeadLetters = append(rb.DeadLetters, copyOf(m))
	}
	return rb, stats, nil
}

func copyOf(m kafkago.Message) chaos.Copy {
	c := chaos.Copy{At: m.Time}
	for _, h := range m.Headers {
		switch h.Key {
		case wire.HeaderMessageID:
			c.ID = string(h.Value)
		case wire.HeaderAttempts:
			c.Attempts, _ = strconv.Atoi(string(h.Value))
		}
	}
	if c.ID == "" {
		if env, err := babelqueue.Decode(m.Value); err == nil {
			c.ID, c.Attempts = env.Meta.ID, env.Attempts
		}
	}
	return c
}

// readTopic reads every record of topic's partitions up to their high
// watermarks at the time of the call.
func (k *kafkaSide) readTopic(ctx context.Context, topic string) ([]kafkago.Message, error) {
	var out []kafkago.Message
	for p := range k.partitions {
		var offset int64
		for {
			resp, err := k.client.Fetch(ctx, &kafkago.FetchRequest{Topic: topic, Partition: p, Offset: offset,
				MinBytes: 1, MaxBytes: 8 << 20, MaxWait: 50 * time.Millisecond})
			if err != nil {
				return nil, fmt.Errorf("read %s/%d@%d: %w", topic, p, offset, err)
			}
			if resp.Error != nil {
				return nil, fmt.Errorf("read %s/%d@%d: %w", topic, p, offset, resp.Error)
			}
			if offset >= resp.HighWatermark {
				break
			}
			for {
				r, err := resp.Records.ReadRecord()
				if errors.Is(err, io.EOF) {
					break
				}
				if err != nil {
					return nil, fmt.Errorf("read %s/%d@%d: %w", topic, p, offset, err)
				}
				if r.Offset < offset {
					continue
				}
				m := kafkago.Message{Topic: topic, Partition: p, Offset: r.Offset, Time: r.Time, Headers: append([]kafkago.Header(nil), r.Headers...)}
				if r.Value != nil {
					if m.Value, err = io.ReadAll(r.Value); err != nil {
						return nil, fmt.Errorf("read %s/%d@%d: %w", topic, p, r.Offset, err)
					}
				}
				out = append(out, m)
				offset = r.Offset + 1
			}
		}
	}
	return out, nil
}

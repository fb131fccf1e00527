package orderstatus

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/segmentio/kafka-go"
)

// ErrNotSettled marks a record that could not be settled although the
// processor was not shutting down: neither the retry topic nor the
// dead-letter topic stored it. Run stops without committing it, and the
// process exits 1 so that a fresh one picks the record up again.
var ErrNotSettled = errors.New("orderstatus: record not settled")

// Fetcher is the consuming side Run needs; *kafka.Reader (in a consumer
// group) implements it.
type Fetcher interface {
	FetchMessage(ctx context.Context) (kafka.Message, error)
	CommitMessages(ctx context.Context, msgs ...kafka.Message) error
}

// partitionQueue bounds the records fetched ahead for one partition.
const partitionQueue = 64

// commitTimeout bounds the commit of a settled record; the commit is not
// cancelled by shutdown, so work already settled is not done twice.
const commitTimeout = 10 * time.Second

// NewReader returns a kafka-go Reader in the consumer group s.GroupID,
// subscribed to the events and retry topics, starting from the earliest
// offset when the group has none and committing synchronously.
func NewReader(s Settings) *kafka.Reader {
	return kafka.NewReader(kafka.ReaderConfig{
		Brokers:           s.Brokers,
		GroupID:           s.GroupID,
		GroupTopics:       []string{s.EventsTopic, s.RetryTopic},
		StartOffset:       kafka.FirstOffset,
		CommitInterval:    0,
		MinBytes:          1,
		MaxBytes:          10 << 20,
		MaxWait:           250 * time.Millisecond,
		ReadBackoffMin:    50 * time.Millisecond,
		ReadBackoffMax:    250 * time.Millisecond,
		JoinGroupBackoff:  250 * time.Millisecond,
		HeartbeatInterval: time.Second,
		SessionTimeout:    10 * time.Second,
		RebalanceTimeout:  10 * time.Second,
	})
}

type partitionKey struct {
	topic     string
	partition int
}

// Run consumes r with p until ctx ends or a record cannot be settled.
//
// Records of one partition are processed one at a time, in order, and each
// is committed once Process settled it; different partitions (of both topics)
// proceed independently, so a retried record waiting out its backoff holds up
// only its own partition. When ctx ends, Run stops fetching, lets every
// partition finish or abandon its current record (an abandoned record is not
// committed and is processed again by the partition's next owner) and returns
// nil. When Process fails although ctx has not ended, Run stops the same way
// and returns an error wrapping ErrNotSettled. A fetch error that is not
// caused by ctx is returned too.
func Run(ctx context.Context, p *Projector, r Fetcher) error {
	runCtx, stop := context.WithCancelCause(ctx)
	defer stop(nil)

	var (
		wg     sync.WaitGroup
		queues = map[partitionKey]chan kafka.Message{}
	)
	worker := func(q <-chan kafka.Message) {
		defer wg.Done()
		for m := range q {
			if runCtx.Err() != nil {
				return
			}
			if err := p.Process(runCtx, m); err != nil {
				if runCtx.Err() != nil {
					p.log.Info("orderstatus: record left for the next owner", "topic", m.Topic, "partition", m.Partition, "offset", m.Offset, "error", err.Error())
					return
				}
				stop(fmt.Errorf("%w: %w", ErrNotSettled, err))
				return
			}
			cctx, cancel := context.WithTimeout(context.WithoutCancel(runCtx), commitTimeout)
			err := r.CommitMessages(cctx, m)
			cancel()
			if err != nil {
				// The record is settled; a lost commit only means it is
				// delivered again and found applied already.
				p.log.Warn("orderstatus: commit failed", "topic", m.Topic, "partition", m.Partition, "offset", m.Offset, "error", err.Error())
			}
		}
	}
	defer func() {
		for _, q := range queues {
			close(q)
		}
		wg.Wait()
	}()

	for {
		m, err := r.FetchMessage(runCtx)
		if err != nil {
			if runCtx.Err() != nil {
				break
			}
			stop(fmt.Errorf("orderstatus: fetching: %w", err))
			break
		}
		k := partitionKey{m.Topic, m.Partition}
		q, ok := queues[k]
		if !ok {
			q = make(chan kafka.Message, partitionQueue)
			queues[k] = q
			wg.Add(1)
			go worker(q)
		}
		select {
		case q <- m:
		case <-runCtx.Done():
		}
		if runCtx.Err() != nil {
			break
		}
	}
	cause := context.Cause(runCtx)
	if ctx.Err() != nil && errors.Is(cause, context.Cause(ctx)) {
		return nil
	}
	return cause
}

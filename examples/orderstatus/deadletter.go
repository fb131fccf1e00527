package orderstatus

import (
	"context"
	"fmt"

	"github.com/segmentio/kafka-go"
)

// deadLetter produces m to the dead-letter topic with its key, value and
// headers plus the dlq.* headers; attempts is 0 for a record given up on at
// once. It returns once the dead letter is stored, so m is committed only
// after it.
func (p *Projector) deadLetter(ctx context.Context, m kafka.Message, from Place, reason string, cause error, attempts int) error {
	err := p.producer.Produce(ctx, Record{
		Topic:   p.settings.DeadLetterTopic,
		Key:     m.Key,
		Value:   m.Value,
		Headers: DeadLetterHeaders(m.Headers, reason, cause, from, attempts),
	})
	if err != nil {
		return fmt.Errorf("dead-lettering %s as %s: %w", from, reason, err)
	}
	p.counters.deadLetter(ctx, reason)
	p.log.WarnContext(ctx, "orderstatus: record dead-lettered", "from", from.String(), "reason", reason, "attempts", attempts, "error", cause.Error())
	return nil
}

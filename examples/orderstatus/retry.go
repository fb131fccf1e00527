package orderstatus

import (
	"context"
	"fmt"

	"github.com/segmentio/kafka-go"
)

// retry produces m to the retry topic one attempt higher, with its key, value
// and headers (old retry.* headers replaced), or dead-letters it when that
// was its last attempt.
func (p *Projector) retry(ctx context.Context, m kafka.Message, from Place, attempt int, reason string, cause error) error {
	failed := attempt + 1
	if failed >= p.settings.Attempts {
		return p.deadLetter(ctx, m, from, reason, cause, failed)
	}
	err := p.producer.Produce(ctx, Record{
		Topic:   p.settings.RetryTopic,
		Key:     m.Key,
		Value:   m.Value,
		Headers: RetryHeaders(m.Headers, failed, reason, cause, from),
	})
	if err != nil {
		return fmt.Errorf("retrying %s as %s, attempt %d: %w", from, reason, failed, err)
	}
	p.counters.retry(ctx, reason)
	p.log.InfoContext(ctx, "orderstatus: record retried", "from", from.String(), "attempt", failed, "reason", reason, "error", cause.Error())
	return nil
}

package kafka

import (
	"context"
	"fmt"
	"strconv"
	"time"

	babelqueue "github.com/babelqueue/babelqueue-go/core"
	"github.com/babelqueue/babelqueue-go/core/driver"
	"github.com/babelqueue/babelqueue-go/core/wire"
)

// PublishRetryForAttempt writes the retry copy of the reserved record from
// to the tier TierForAttempt picks, as Send of IntentRetry does
// (CONTRACT.md 6.5). That is tier min(attemptsBefore, N-1) + 1 of the N
// configured tiers. The copy carries attempts = attemptsBefore+1 in the
// bq-attempts header and in the body (only that number changes; a body that
// cannot hold it is written as received), bq-delay = the tier in
// milliseconds, bq-original-topic = the record's topic, the record key byte
// for byte, the delivery's bq-job and every out-of-band header of the
// delivery (traceparent, tracestate, bq-replay-bypass, bq-redrive-count
// included), each once, so the header set never grows from hop to hop. Its
// timestamp is the publish time, from which the Reinjector counts the tier.
// The caller commits the original afterwards (Ack). With no tiers it
// returns ErrDelayUnsupported and writes nothing.
func (t *Transport) PublishRetryForAttempt(ctx context.Context, from *babelqueue.ReceivedMessage, attemptsBefore int) error {
	if len(t.cfg.tiers) == 0 {
		return ErrDelayUnsupported
	}
	if from == nil || wire.IsBlank(from.Queue) {
		return ErrEmptyTopic
	}
	attemptsBefore = max(attemptsBefore, 0)
	n := TierForAttempt(attemptsBefore, len(t.cfg.tiers))
	_, err := t.sendTier(ctx, retryOf(from, attemptsBefore), n, t.cfg.tiers[n-1])
	return err
}

// PublishRetry writes the reserved record from to the smallest retry tier
// that covers delay; otherwise it is like PublishRetryForAttempt. attempts
// (body and bq-attempts) is the delivery's attempts + 1 and bq-delay the
// delay in milliseconds. It returns ErrDelayUnsupported, writing nothing,
// when no tier covers delay.
//
// Deprecated: CONTRACT.md 6.5 picks the retry tier from the attempt count, not from a
// delay. Use PublishRetryForAttempt.
func (t *Transport) PublishRetry(ctx context.Context, from *babelqueue.ReceivedMessage, delay time.Duration) error {
	n := tierForDelay(delay, t.cfg.tiers)
	if n == 0 {
		return fmt.Errorf("%w: delay %v", ErrDelayUnsupported, delay)
	}
	if from == nil || wire.IsBlank(from.Queue) {
		return ErrEmptyTopic
	}
	_, err := t.sendTier(ctx, retryOf(from, deliveredAttempts(from)), n, delay)
	return err
}

// PublishDelayed writes body to the smallest retry tier of queue whose
// delay is at least delay, as Send of IntentPublish with a delay does. The
// record has the CONTRACT.md 6 projection, bq-delay = that tier in
// milliseconds and bq-original-topic = queue. A Reinjector writes it back
// to queue once the tier has elapsed. It returns ErrDelayUnsupported,
// writing nothing, when no tier covers delay. A delay of zero or less is a
// plain Publish.
func (t *Transport) PublishDelayed(ctx context.Context, queue, body string, delay time.Duration) error {
	_, err := t.Send(ctx, &driver.Outgoing{Intent: driver.IntentPublish, Queue: queue, Body: body, Delay: delay})
	return err
}

// retryOf is the Outgoing of the next attempt of from, which had
// attemptsBefore attempts, as the App builds it: the body with attempts =
// attemptsBefore+1, and the delivery's out-of-band headers, bq-job,
// bq-redrive-count and bq-replay-bypass with bq-attempts = attemptsBefore+1.
func retryOf(from *babelqueue.ReceivedMessage, attemptsBefore int) *driver.Outgoing {
	attempts := attemptsBefore + 1
	body := from.Body
	if out, err := wire.SetAttempts([]byte(body), attempts); err == nil {
		body = string(out)
	}
	delivered := from.Headers
	if d, ok := recordOf(from); ok {
		// The record's headers, overridden by what the delivery's map says
		// (a caller may have added to it).
		rec := headerMap(d.msg.Headers)
		if rec == nil {
			rec = make(map[string]string, len(delivered))
		}
		for k, v := range delivered {
			rec[k] = v
		}
		delivered = rec
	}
	h := make(map[string]string, len(delivered)+1)
	for k, v := range delivered {
		if !wire.IsContractHeader(k) {
			h[k] = v
		}
	}
	for _, k := range [...]string{wire.HeaderJob, wire.HeaderRedriveCount, wire.HeaderReplayBypass} {
		if v, ok := delivered[k]; ok && !wire.IsBlank(v) {
			h[k] = v
		}
	}
	h[wire.HeaderAttempts] = strconv.Itoa(attempts)
	return &driver.Outgoing{Intent: driver.IntentRetry, Queue: from.Queue, Body: body, From: from, Headers: h, Attempt: attemptsBefore}
}

// deliveredAttempts is the reconciled attempts of a delivery: the body's
// count (Pop already synced it with a valid header), else the header's,
// else 0.
func deliveredAttempts(m *babelqueue.ReceivedMessage) int {
	if n, ok := wire.ParseAttemptsHeader(wire.ProjectBody([]byte(m.Body)).Attempts); ok {
		return n
	}
	if v, ok := m.Header(wire.HeaderAttempts); ok {
		if n, ok := wire.ParseAttemptsHeader(v); ok {
			return n
		}
	}
	return 0
}

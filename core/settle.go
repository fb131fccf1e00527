package babelqueue

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"strconv"
)

// This file holds every way the App settles a delivery. Every path but the
// plain acknowledgement of a handled message starts by filling the
// message's deferred headers (DeferredHeaderPopper), so that what it writes
// or hands on sees them all. The rule of them all (SPEC 4.4): the original is acknowledged only after the write that
// replaces it (a retry copy, a dead letter) was acknowledged by the broker.
// A failed write leaves the original unsettled — rewound when the
// transport is a Rewinder, else negatively acknowledged when it is a
// NegativeAcknowledger, else left reserved for the transport to redeliver —
// is reported with an error wrapping ErrSettle, and is not counted as an
// attempt.

// settleCtx returns the context of settle calls: not cancelled with the
// consume context, bounded by the settle timeout.
func (a *App) settleCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), a.cfg.settleTimeout)
}

// ack acknowledges a handled message.
func (a *App) ack(ctx context.Context, msg *ReceivedMessage, env *Envelope, route string) outcome {
	if err := a.ackWithin(ctx, msg); err != nil {
		return a.ackFailed(ctx, msg, env, route, err)
	}
	return outcome{}
}

// ackAfterWrite acknowledges the original once its replacement is written.
func (a *App) ackAfterWrite(ctx context.Context, msg *ReceivedMessage, env *Envelope, route, what string) outcome {
	if err := a.ackWithin(ctx, msg); err != nil {
		return a.ackFailed(ctx, msg, env, route, fmt.Errorf("%s written, but: %w", what, err))
	}
	return outcome{}
}

// ackWithin calls the transport's Ack with a settle context (the values of
// ctx, not its cancellation, and the settle timeout). Ack runs once per
// delivery, so its context comes from a pool of re-armable ones instead of
// a context and a timer made for each call.
func (a *App) ackWithin(ctx context.Context, msg *ReceivedMessage) error {
	sctx, _ := a.ackCtxs.Get().(*CallContext)
	if sctx == nil {
		sctx = NewCallContext(true)
	}
	sctx.Arm(ctx, a.cfg.settleTimeout)
	err := a.t.Ack(sctx, msg)
	sctx.Disarm()
	a.ackCtxs.Put(sctx)
	return err
}

func (a *App) ackFailed(ctx context.Context, msg *ReceivedMessage, env *Envelope, route string, err error) outcome {
	msg.FillHeaders()
	a.unsettle(ctx, msg, "acknowledge failed")
	derr := a.deliveryErr(msg, env, route, fmt.Errorf("%w: acknowledge: %w", ErrSettle, err))
	a.reportError(ctx, "babelqueue: acknowledge failed; message left for redelivery", derr, a.attrs(msg, env, route)...)
	return outcome{err: derr, settleFailed: true}
}

// writeFailed handles a failed retry, release or dead-letter write.
func (a *App) writeFailed(ctx context.Context, msg *ReceivedMessage, env *Envelope, route, what string, err error) outcome {
	a.unsettle(ctx, msg, what+" failed")
	derr := a.deliveryErr(msg, env, route, fmt.Errorf("%w: %s: %w", ErrSettle, what, err))
	a.reportError(ctx, "babelqueue: settle write failed; message left for redelivery", derr, a.attrs(msg, env, route)...)
	return outcome{err: derr, settleFailed: true}
}

// unsettle hands a message back without settling it: Rewind, else Nack,
// else nothing (the transport redelivers what was never acknowledged).
func (a *App) unsettle(ctx context.Context, msg *ReceivedMessage, why string) {
	msg.FillHeaders()
	sctx, cancel := a.settleCtx(ctx)
	defer cancel()
	var err error
	switch t := a.t.(type) {
	case Rewinder:
		err = t.Rewind(sctx, msg)
	case NegativeAcknowledger:
		err = t.Nack(sctx, msg)
	default:
		a.logger().LogAttrs(ctx, slog.LevelDebug, "babelqueue: message left reserved for redelivery",
			slog.String("queue", msg.Queue), slog.String("why", why))
		return
	}
	if err != nil {
		a.reportError(ctx, "babelqueue: handing a message back failed", &DeliveryError{Queue: msg.Queue, Err: fmt.Errorf("%w: handing the message back after %s: %w", ErrSettle, why, err)},
			slog.String("queue", msg.Queue))
	}
}

func (a *App) deliveryErr(msg *ReceivedMessage, env *Envelope, route string, err error) *DeliveryError {
	d := &DeliveryError{Queue: msg.Queue, URN: route, Err: err}
	if env != nil {
		d.MessageID = env.Meta.ID
	}
	return d
}

// retryHeaders returns the out-of-band headers a retried or released copy
// carries: every header that is not a contract header (traceparent,
// tracestate, the user's own), the incoming bq-job route, so that the copy
// reaches the same handler, and bq-replay-bypass, so that a replay stays a
// replay on its retries. The transport projects the other contract headers
// from the body.
func retryHeaders(msg *ReceivedMessage) map[string]string {
	h := deadLetterHeaders(msg)
	if v, ok := msg.Header(HeaderReplayBypass); ok && !IsBlank(v) {
		h[HeaderReplayBypass] = v
	}
	return h
}

// deadLetterHeaders returns the out-of-band headers of a dead letter (and
// of a retried copy): the non-contract headers, the incoming bq-job route
// and bq-redrive-count, so that the replay-count guard of a later redrive
// still knows how often the message was redriven.
func deadLetterHeaders(msg *ReceivedMessage) map[string]string {
	h := make(map[string]string)
	for k, v := range msg.Headers {
		if !IsContractHeader(k) {
			h[k] = v
		}
	}
	for _, k := range [...]string{HeaderJob, HeaderRedriveCount} {
		if v, ok := msg.Header(k); ok && !IsBlank(v) {
			h[k] = v
		}
	}
	return h
}

// writeKeyed writes body to queue keeping the key of from, by the best
// capability the transport has: HeaderRepublisher, KeyedRepublisher (the
// headers are then not written), HeaderPublisher (the key is then lost),
// Publish.
//
// One case comes first: when headers carry a bq-job route that differs
// from the body's URN (a routing mismatch), a header republish would lose
// it (the contract projection wins a collision) and the copy would reach
// another handler. A Forwarder then writes the projected headers with the
// delivered route in place of the body's.
func (a *App) writeKeyed(ctx context.Context, queue, body string, from *ReceivedMessage, headers map[string]string) error {
	if job, ok := headers[HeaderJob]; ok {
		if fw, isFw := a.t.(Forwarder); isFw {
			if p := ProjectBody([]byte(body)); p.Job != "" && p.Job != job {
				h := make(map[string]string, len(headers)+6)
				for _, x := range MergeHeaders(p.Headers(), headers) {
					h[x.Key] = x.Value
				}
				h[HeaderJob] = job
				return fw.Forward(ctx, queue, body, from, h)
			}
		}
	}
	if t, ok := a.t.(HeaderRepublisher); ok {
		return t.PublishFromWithHeaders(ctx, queue, body, from, headers)
	}
	if t, ok := a.t.(KeyedRepublisher); ok {
		return t.PublishFrom(ctx, queue, body, from)
	}
	if t, ok := a.t.(HeaderPublisher); ok && len(headers) > 0 {
		return t.PublishWithHeaders(ctx, queue, body, headers)
	}
	return a.t.Publish(ctx, queue, body)
}

// settleVersionGated settles a message rejected by the version gate (its
// bq-schema-version header, or meta.schema_version of its body, is not 1).
// It is never retried: with dead-lettering on its body and headers go to
// the DLQ exactly as received, else it is acknowledged with a warning.
// Handlers, the unknown-URN strategy and the routing-mismatch hook are not
// involved.
func (a *App) settleVersionGated(ctx context.Context, msg *ReceivedMessage, version string, cause error) outcome {
	msg.FillHeaders()
	if fn := a.cfg.onVersion; fn != nil {
		safely(func() { fn(version, msg.Queue) })
	}
	attrs := []slog.Attr{slog.String("queue", msg.Queue), slog.String("schema_version", version)}
	a.reportError(ctx, "babelqueue: schema version rejected", &DeliveryError{Queue: msg.Queue, Err: fmt.Errorf("schema version %q rejected: %w", version, cause)}, attrs...)
	if !a.cfg.deadLetter {
		out := a.ack(ctx, msg, nil, "")
		if out.err == nil {
			a.reportWarning(ctx, "babelqueue: version-gated message dropped", &DeliveryError{Queue: msg.Queue,
				Err: fmt.Errorf("schema version %q rejected and dropped (dead-lettering off): %w", version, cause)}, attrs...)
		}
		return out
	}
	dlq := a.deadLetterQueue(msg.Queue)
	sctx, cancel := a.settleCtx(ctx)
	defer cancel()
	var err error
	if fw, ok := a.t.(Forwarder); ok {
		err = fw.Forward(sctx, dlq, msg.Body, msg, maps.Clone(msg.Headers))
	} else {
		err = a.writeKeyed(sctx, dlq, msg.Body, msg, maps.Clone(msg.Headers))
	}
	if err != nil {
		return a.writeFailed(ctx, msg, nil, "", "dead-letter write to "+dlq, err)
	}
	return a.ackAfterWrite(ctx, msg, nil, "", "dead letter")
}

// poisonAttempts returns the reconciled attempts of a body that did not
// decode: a valid bq-attempts header, else the body's attempts when it can
// be read, else 0.
func poisonAttempts(msg *ReceivedMessage) int {
	body := 0
	if n, ok := ParseAttemptsHeader(ProjectBody([]byte(msg.Body)).Attempts); ok {
		body = n
	}
	h, present := msg.Header(HeaderAttempts)
	return ReconcileKafka(body, h, present)
}

// settlePoison settles a body that is not a conformant envelope. With
// dead-lettering on it is dead-lettered at once in the poison shape, the
// incoming bq-job and the key kept; off, it takes the bounded retry.
func (a *App) settlePoison(ctx context.Context, msg *ReceivedMessage, cause error) outcome {
	msg.FillHeaders()
	route, _ := msg.Header(HeaderJob)
	a.reportError(ctx, "babelqueue: poison message", &DeliveryError{Queue: msg.Queue, URN: route, Err: cause}, slog.String("queue", msg.Queue))
	if !a.cfg.deadLetter {
		return a.settleRetryable(ctx, msg, nil, route, ReasonPoison, cause)
	}
	counted := poisonAttempts(msg) + 1
	body := PoisonBody([]byte(msg.Body), a.deadLetterBlock(msg, ReasonPoison, cause, counted))
	return a.writeDeadLetter(ctx, msg, nil, route, string(body))
}

// settleUnknownURN applies the unknown-URN strategy.
func (a *App) settleUnknownURN(ctx context.Context, msg *ReceivedMessage, env *Envelope, route string) outcome {
	msg.FillHeaders()
	cause := &UnknownURNError{URN: route}
	attrs := a.attrs(msg, env, route, slog.String("strategy", string(a.cfg.unknownURN)))
	switch a.cfg.unknownURN {
	case StrategyDelete:
		out := a.ack(ctx, msg, env, route)
		if out.err == nil {
			a.reportWarning(ctx, "babelqueue: message without handler deleted", a.deliveryErr(msg, env, route, fmt.Errorf("deleted: %w", cause)), attrs...)
		}
		return out
	case StrategyRelease:
		return a.release(ctx, msg, env, route, cause)
	case StrategyDeadLetter:
		counted := Decide(env.Attempts, 1, true).Counted
		if !a.cfg.deadLetter {
			out := a.ack(ctx, msg, env, route)
			if out.err == nil {
				a.reportWarning(ctx, "babelqueue: message without handler dropped", a.deliveryErr(msg, env, route, fmt.Errorf("dropped (dead-lettering off): %w", cause)), attrs...)
			}
			return out
		}
		a.reportError(ctx, "babelqueue: no handler", a.deliveryErr(msg, env, route, cause), attrs...)
		return a.deadLetter(ctx, msg, env, route, ReasonUnknownURN, cause, counted)
	default: // StrategyFail
		a.reportError(ctx, "babelqueue: no handler", a.deliveryErr(msg, env, route, cause), attrs...)
		return a.settleRetryable(ctx, msg, env, route, ReasonUnknownURN, cause)
	}
}

// release hands a message with no handler back to its queue unchanged,
// attempts not counted, then acknowledges the original.
func (a *App) release(ctx context.Context, msg *ReceivedMessage, env *Envelope, route string, cause error) outcome {
	sctx, cancel := a.settleCtx(ctx)
	defer cancel()
	if err := a.writeKeyed(sctx, msg.Queue, msg.Body, msg, retryHeaders(msg)); err != nil {
		out := a.writeFailed(ctx, msg, env, route, "release to "+msg.Queue, err)
		out.released, out.key = true, msg.Body
		return out
	}
	out := a.ackAfterWrite(ctx, msg, env, route, "released copy")
	if out.err == nil {
		a.reportWarning(ctx, "babelqueue: message without handler released", a.deliveryErr(msg, env, route, fmt.Errorf("released to %s: %w", msg.Queue, cause)),
			a.attrs(msg, env, route)...)
	}
	out.released, out.key = true, msg.Body
	return out
}

// settleRetryable applies the max-attempts rule to a retryable outcome.
// env is nil for a poison body.
func (a *App) settleRetryable(ctx context.Context, msg *ReceivedMessage, env *Envelope, route, reason string, cause error) outcome {
	msg.FillHeaders()
	reconciled := 0
	if env != nil {
		reconciled = env.Attempts
	} else {
		reconciled = poisonAttempts(msg)
	}
	d := Decide(reconciled, a.cfg.maxAttempts, a.cfg.deadLetter)
	switch d.Action {
	case ActionRetry:
		return a.retry(ctx, msg, env, route, reconciled, d.Counted)
	case ActionDeadLetter:
		return a.deadLetter(ctx, msg, env, route, reason, cause, d.Counted)
	default:
		out := a.ack(ctx, msg, env, route)
		if out.err == nil {
			a.reportWarning(ctx, "babelqueue: message dropped after its last attempt", a.deliveryErr(msg, env, route,
				fmt.Errorf("dropped after %d of %d attempts (dead-lettering off): %w", d.Counted, a.cfg.maxAttempts, cause)),
				a.attrs(msg, env, route)...)
		}
		return out
	}
}

// retry delivers the message again with attempts = counted, by the first
// of: the transport's TieredRetrier (unless it has no tiers), its Retrier
// (which settles the original itself), or a republish of the body with
// attempts = counted onto the queue it came from, keeping the key.
func (a *App) retry(ctx context.Context, msg *ReceivedMessage, env *Envelope, route string, reconciled, counted int) outcome {
	sctx, cancel := a.settleCtx(ctx)
	defer cancel()
	a.logger().LogAttrs(ctx, slog.LevelDebug, "babelqueue: retrying message", a.attrs(msg, env, route, slog.Int("counted", counted))...)
	if t, ok := a.t.(TieredRetrier); ok {
		err := t.PublishRetryForAttempt(sctx, msg, reconciled)
		if err == nil {
			return a.ackAfterWrite(ctx, msg, env, route, "retry copy")
		}
		if !errors.Is(err, ErrDelayUnsupported) {
			return a.writeFailed(ctx, msg, env, route, "tiered retry", err)
		}
	}
	if t, ok := a.t.(Retrier); ok {
		if err := t.Retry(sctx, msg, counted); err != nil {
			return a.writeFailed(ctx, msg, env, route, "retry", err)
		}
		return outcome{}
	}
	body := msg.Body
	if b, err := SetAttempts([]byte(msg.Body), counted); err == nil {
		body = string(b)
	}
	headers := retryHeaders(msg)
	headers[HeaderAttempts] = strconv.Itoa(counted)
	if err := a.writeKeyed(sctx, msg.Queue, body, msg, headers); err != nil {
		return a.writeFailed(ctx, msg, env, route, "retry write to "+msg.Queue, err)
	}
	return a.ackAfterWrite(ctx, msg, env, route, "retry copy")
}

// deadLetterBlock returns the dead_letter block of a message failed for
// reason by cause at its counted-th delivery.
func (a *App) deadLetterBlock(msg *ReceivedMessage, reason string, cause error, counted int) DeadLetter {
	errText, exc := cause.Error(), exceptionName(cause)
	return DeadLetter{
		Reason:        reason,
		Error:         &errText,
		Exception:     &exc,
		FailedAt:      a.cfg.clock.Now().UnixMilli(),
		OriginalQueue: msg.Queue,
		Attempts:      counted,
		Lang:          Lang,
	}
}

// deadLetter writes the received body, with attempts = counted and a
// dead_letter block, to the dead-letter queue, then acknowledges.
func (a *App) deadLetter(ctx context.Context, msg *ReceivedMessage, env *Envelope, route, reason string, cause error, counted int) outcome {
	dl := a.deadLetterBlock(msg, reason, cause, counted)
	body, err := AnnotateDeadLetter([]byte(msg.Body), dl)
	if err != nil {
		// The body decoded, so this should not happen; never lose it.
		body = PoisonBody([]byte(msg.Body), dl)
	}
	return a.writeDeadLetter(ctx, msg, env, route, string(body))
}

func (a *App) writeDeadLetter(ctx context.Context, msg *ReceivedMessage, env *Envelope, route, body string) outcome {
	dlq := a.deadLetterQueue(msg.Queue)
	sctx, cancel := a.settleCtx(ctx)
	defer cancel()
	if err := a.writeKeyed(sctx, dlq, body, msg, deadLetterHeaders(msg)); err != nil {
		return a.writeFailed(ctx, msg, env, route, "dead-letter write to "+dlq, err)
	}
	a.logger().LogAttrs(ctx, slog.LevelInfo, "babelqueue: message dead-lettered", a.attrs(msg, env, route, slog.String("dead_letter_queue", dlq))...)
	return a.ackAfterWrite(ctx, msg, env, route, "dead letter")
}

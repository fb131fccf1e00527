package babelqueue

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"strconv"

	"github.com/babelqueue/babelqueue-go/core/driver"
	"github.com/babelqueue/babelqueue-go/core/wire"
)

// This file holds every way the App settles a delivery. Every path but the
// plain acknowledgement of a handled message starts by filling the
// message's deferred headers, so that what it writes or hands on sees them
// all. The rule of them all (CONTRACT.md 4.4): the original is acknowledged only
// after the write that replaces it (a retry copy, a dead letter) was
// acknowledged by the broker. A failed write leaves the original
// unsettled (handed back through Transport.HandBack), is reported with an
// error wrapping ErrSettle, and is not counted as an attempt. Every path
// returns an outcome whose Settlement the SettleHooks receive.

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
	return outcome{st: Settlement{Outcome: OutcomeHandled}}
}

// settled returns out with its Settlement set to st, unless the
// acknowledgement behind out failed (the message was then handed back).
func settled(out outcome, st Settlement) outcome {
	if out.err == nil {
		out.st = st
	}
	return out
}

// ackAfterWrite acknowledges the original once its replacement is written.
func (a *App) ackAfterWrite(ctx context.Context, msg *ReceivedMessage, env *Envelope, route, what string, st Settlement) outcome {
	if err := a.ackWithin(ctx, msg); err != nil {
		return a.ackFailed(ctx, msg, env, route, fmt.Errorf("%s written, but: %w", what, err))
	}
	return outcome{st: st}
}

// ackWithin calls the transport's Ack with a settle context (the values of
// ctx, not its cancellation, and the settle timeout). Ack runs once per
// delivery, so its context comes from a pool of re-armable ones instead of
// a context and a timer made for each call. A binding whose Ack uses no
// context (driver.Features.AckNonBlocking) gets ctx as is.
func (a *App) ackWithin(ctx context.Context, msg *ReceivedMessage) error {
	if a.features.AckNonBlocking {
		// The binding's Ack uses no deadline or cancellation: nothing to arm.
		return a.t.Ack(ctx, msg)
	}
	sctx, _ := a.ackCtxs.Get().(*driver.CallContext)
	if sctx == nil {
		sctx = driver.NewCallContext(true)
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
	return outcome{err: derr, settleFailed: true, st: Settlement{Outcome: OutcomeHandedBack, Err: derr}}
}

// writeFailed handles a failed retry, release or dead-letter write.
func (a *App) writeFailed(ctx context.Context, msg *ReceivedMessage, env *Envelope, route, what string, err error) outcome {
	a.unsettle(ctx, msg, what+" failed")
	return a.leftFailed(ctx, msg, env, route, what, err)
}

// leftFailed reports a failed write whose original was already handed
// back.
func (a *App) leftFailed(ctx context.Context, msg *ReceivedMessage, env *Envelope, route, what string, err error) outcome {
	derr := a.deliveryErr(msg, env, route, fmt.Errorf("%w: %s: %w", ErrSettle, what, err))
	a.reportError(ctx, "babelqueue: settle write failed; message left for redelivery", derr, a.attrs(msg, env, route)...)
	return outcome{err: derr, settleFailed: true, st: Settlement{Outcome: OutcomeHandedBack, Err: derr}}
}

// unsettle hands a message back without settling it (Transport.HandBack).
func (a *App) unsettle(ctx context.Context, msg *ReceivedMessage, why string) {
	msg.FillHeaders()
	if a.features.HandBack == driver.HandBackNone {
		a.logger().LogAttrs(ctx, slog.LevelDebug, "babelqueue: message left reserved for redelivery",
			slog.String("queue", msg.Queue), slog.String("why", why))
	}
	sctx, cancel := a.settleCtx(ctx)
	defer cancel()
	if err := a.t.HandBack(sctx, msg); err != nil {
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
	if v, ok := msg.Header(wire.HeaderReplayBypass); ok && !wire.IsBlank(v) {
		h[wire.HeaderReplayBypass] = v
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
		if !wire.IsContractHeader(k) {
			h[k] = v
		}
	}
	for _, k := range [...]string{wire.HeaderJob, wire.HeaderRedriveCount} {
		if v, ok := msg.Header(k); ok && !wire.IsBlank(v) {
			h[k] = v
		}
	}
	return h
}

// writeFrom writes a settle copy of from (intent says which) and returns
// the binding's receipt. Its context is a settle context.
func (a *App) writeFrom(ctx context.Context, intent driver.Intent, queue, body string, from *ReceivedMessage, headers map[string]string, attempt int) (driver.Receipt, error) {
	return a.send(ctx, &driver.Outgoing{Intent: intent, Queue: queue, Body: body, From: from, Headers: headers, Attempt: attempt})
}

// target is where a write went: the binding's choice, else the queue asked.
func target(r driver.Receipt, queue string) string {
	if r.Queue != "" {
		return r.Queue
	}
	return queue
}

// settleVersionGated settles a message rejected by the version gate (its
// bq-schema-version header, or meta.schema_version of its body, is not 1).
// It is never retried: with dead-lettering on its body and headers go to
// the DLQ exactly as received (driver.IntentForward), else it is acknowledged with
// a warning. Handlers, the unknown-URN strategy and the routing-mismatch
// hook are not involved.
func (a *App) settleVersionGated(ctx context.Context, msg *ReceivedMessage, version string, cause error) outcome {
	msg.FillHeaders()
	if fn := a.cfg.onVersion; fn != nil {
		safely(func() { fn(version, msg.Queue) })
	}
	attrs := []slog.Attr{slog.String("queue", msg.Queue), slog.String("schema_version", version)}
	rejected := fmt.Errorf("schema version %q rejected: %w", version, cause)
	a.reportError(ctx, "babelqueue: schema version rejected", &DeliveryError{Queue: msg.Queue, Err: rejected}, attrs...)
	if !a.cfg.deadLetter {
		out := a.ack(ctx, msg, nil, "")
		if out.err == nil {
			a.reportWarning(ctx, "babelqueue: version-gated message dropped", &DeliveryError{Queue: msg.Queue,
				Err: fmt.Errorf("schema version %q rejected and dropped (dead-lettering off): %w", version, cause)}, attrs...)
		}
		return settled(out, Settlement{Outcome: OutcomeDropped, Reason: wire.ReasonVersionGated, Err: rejected})
	}
	dlq := a.deadLetterQueue(msg.Queue)
	sctx, cancel := a.settleCtx(ctx)
	defer cancel()
	r, err := a.writeFrom(sctx, driver.IntentForward, dlq, msg.Body, msg, maps.Clone(msg.Headers), 0)
	if err != nil {
		return a.settleRefused(ctx, msg, nil, "", "dead-letter write to "+dlq, len(msg.Body), err,
			wire.ReasonVersionGated, rejected, poisonAttempts(msg)+1, false)
	}
	return a.ackAfterWrite(ctx, msg, nil, "", "dead letter",
		Settlement{Outcome: OutcomeDeadLettered, Reason: wire.ReasonVersionGated, Target: target(r, dlq), Err: rejected})
}

// poisonAttempts returns the reconciled attempts of a body that did not
// decode: a valid bq-attempts header, else the body's attempts when it can
// be read, else 0.
func poisonAttempts(msg *ReceivedMessage) int {
	body := 0
	if n, ok := wire.BodyAttempts([]byte(msg.Body)); ok {
		body = n
	}
	h, present := msg.Header(wire.HeaderAttempts)
	return wire.ReconcileKafka(body, h, present)
}

// settlePoison settles a body that is not a conformant envelope. With
// dead-lettering on it is dead-lettered at once in the poison shape, the
// incoming bq-job and the key kept; off, it takes the bounded retry.
func (a *App) settlePoison(ctx context.Context, msg *ReceivedMessage, cause error) outcome {
	msg.FillHeaders()
	route, _ := msg.Header(wire.HeaderJob)
	a.reportError(ctx, "babelqueue: poison message", &DeliveryError{Queue: msg.Queue, URN: route, Err: cause}, slog.String("queue", msg.Queue))
	if !a.cfg.deadLetter {
		return a.settleRetryable(ctx, msg, nil, route, wire.ReasonPoison, cause)
	}
	counted := poisonAttempts(msg) + 1
	body := wire.PoisonBody([]byte(msg.Body), a.deadLetterBlock(msg, wire.ReasonPoison, cause, counted))
	return a.writeDeadLetter(ctx, msg, nil, route, string(body), wire.ReasonPoison, cause, counted)
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
		return settled(out, Settlement{Outcome: OutcomeDeleted, Reason: wire.ReasonUnknownURN, Err: cause})
	case StrategyRelease:
		return a.release(ctx, msg, env, route, cause)
	case StrategyDeadLetter:
		if !a.cfg.deadLetter {
			out := a.ack(ctx, msg, env, route)
			if out.err == nil {
				a.reportWarning(ctx, "babelqueue: message without handler dropped", a.deliveryErr(msg, env, route, fmt.Errorf("dropped (dead-lettering off): %w", cause)), attrs...)
			}
			return settled(out, Settlement{Outcome: OutcomeDropped, Reason: wire.ReasonUnknownURN, Err: cause})
		}
		counted := wire.Decide(env.Attempts, 1, true).Counted
		a.reportError(ctx, "babelqueue: no handler", a.deliveryErr(msg, env, route, cause), attrs...)
		return a.deadLetter(ctx, msg, env, route, wire.ReasonUnknownURN, cause, counted)
	default: // StrategyFail
		a.reportError(ctx, "babelqueue: no handler", a.deliveryErr(msg, env, route, cause), attrs...)
		return a.settleRetryable(ctx, msg, env, route, wire.ReasonUnknownURN, cause)
	}
}

// release hands a message with no handler back to its queue unchanged,
// attempts not counted, then acknowledges the original.
func (a *App) release(ctx context.Context, msg *ReceivedMessage, env *Envelope, route string, cause error) outcome {
	sctx, cancel := a.settleCtx(ctx)
	defer cancel()
	r, err := a.writeFrom(sctx, driver.IntentRelease, msg.Queue, msg.Body, msg, retryHeaders(msg), 0)
	if errors.Is(err, driver.ErrTooLarge) {
		return a.oversize(ctx, msg, env, route, "release to "+msg.Queue, len(msg.Body), err, wire.ReasonUnknownURN, cause, env.Attempts)
	}
	if err != nil {
		out := a.writeFailed(ctx, msg, env, route, "release to "+msg.Queue, err)
		out.released, out.key = true, msg.Body
		return out
	}
	out := a.ackAfterWrite(ctx, msg, env, route, "released copy",
		Settlement{Outcome: OutcomeReleased, Reason: wire.ReasonUnknownURN, Target: target(r, msg.Queue), Err: cause})
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
	d := wire.Decide(reconciled, a.cfg.maxAttempts, a.cfg.deadLetter)
	switch d.Action {
	case wire.ActionRetry:
		return a.retry(ctx, msg, env, route, reconciled, d.Counted, reason, cause)
	case wire.ActionDeadLetter:
		return a.deadLetter(ctx, msg, env, route, reason, cause, d.Counted)
	default:
		out := a.ack(ctx, msg, env, route)
		if out.err == nil {
			a.reportWarning(ctx, "babelqueue: message dropped after its last attempt", a.deliveryErr(msg, env, route,
				fmt.Errorf("dropped after %d deliveries (max attempts %d, dead-lettering off): %w", d.Counted, a.cfg.maxAttempts, cause)),
				a.attrs(msg, env, route)...)
		}
		return settled(out, Settlement{Outcome: OutcomeDropped, Reason: reason, Err: cause})
	}
}

// retry asks the binding for the message's next attempt (driver.IntentRetry): the
// body with attempts = counted (a poison body byte for byte),
// the retry headers with bq-attempts = counted, the key kept. A binding
// with retry tiers delays it by the tier of its attempts. Unless the
// binding settles retries itself, the original is acknowledged after the
// write.
func (a *App) retry(ctx context.Context, msg *ReceivedMessage, env *Envelope, route string, reconciled, counted int, reason string, cause error) outcome {
	sctx, cancel := a.settleCtx(ctx)
	defer cancel()
	a.logger().LogAttrs(ctx, slog.LevelDebug, "babelqueue: retrying message", a.attrs(msg, env, route)...)
	body := msg.Body
	if env != nil {
		// A poison body is republished byte for byte: only bq-attempts
		// moves (CONTRACT.md 5).
		if b, err := wire.SetAttempts([]byte(msg.Body), counted); err == nil {
			body = string(b)
		}
	}
	headers := retryHeaders(msg)
	headers[wire.HeaderAttempts] = strconv.Itoa(counted)
	r, err := a.writeFrom(sctx, driver.IntentRetry, msg.Queue, body, msg, headers, reconciled)
	if err != nil {
		// A binding that settles retries handed the original back itself,
		// unless the copy was refused as too large (driver.ErrTooLarge).
		return a.settleRefused(ctx, msg, env, route, "retry write to "+msg.Queue, len(body), err, reason, cause, counted, a.features.SettlesRetry)
	}
	st := Settlement{Outcome: OutcomeRetried, Reason: reason, Target: target(r, msg.Queue), Delay: r.Delay, Err: cause}
	if a.features.SettlesRetry {
		return outcome{st: st}
	}
	return a.ackAfterWrite(ctx, msg, env, route, "retry copy", st)
}

// deadLetterBlock returns the dead_letter block of a message failed for
// reason by cause at its counted-th delivery.
func (a *App) deadLetterBlock(msg *ReceivedMessage, reason string, cause error, counted int) wire.DeadLetter {
	errText, exc := cause.Error(), exceptionName(cause)
	return wire.DeadLetter{
		Reason:        reason,
		Error:         &errText,
		Exception:     &exc,
		FailedAt:      a.cfg.clock.Now().UnixMilli(),
		OriginalQueue: msg.Queue,
		Attempts:      counted,
		Lang:          wire.Lang,
	}
}

// deadLetter writes the received body, with attempts = counted and a
// dead_letter block, to the dead-letter queue, then acknowledges.
func (a *App) deadLetter(ctx context.Context, msg *ReceivedMessage, env *Envelope, route, reason string, cause error, counted int) outcome {
	dl := a.deadLetterBlock(msg, reason, cause, counted)
	body, err := wire.AnnotateDeadLetter([]byte(msg.Body), dl)
	if err != nil {
		// The body decoded, so this should not happen; never lose it.
		body = wire.PoisonBody([]byte(msg.Body), dl)
	}
	return a.writeDeadLetter(ctx, msg, env, route, string(body), reason, cause, counted)
}

func (a *App) writeDeadLetter(ctx context.Context, msg *ReceivedMessage, env *Envelope, route, body, reason string, cause error, counted int) outcome {
	dlq := a.deadLetterQueue(msg.Queue)
	sctx, cancel := a.settleCtx(ctx)
	defer cancel()
	r, err := a.writeFrom(sctx, driver.IntentDeadLetter, dlq, body, msg, deadLetterHeaders(msg), 0)
	if err != nil {
		return a.settleRefused(ctx, msg, env, route, "dead-letter write to "+dlq, len(body), err, reason, cause, counted, false)
	}
	a.logger().LogAttrs(ctx, slog.LevelInfo, "babelqueue: message dead-lettered", a.attrs(msg, env, route, slog.String("dead_letter_queue", dlq))...)
	return a.ackAfterWrite(ctx, msg, env, route, "dead letter",
		Settlement{Outcome: OutcomeDeadLettered, Reason: reason, Target: target(r, dlq), Err: cause})
}

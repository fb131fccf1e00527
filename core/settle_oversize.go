package babelqueue

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/babelqueue/babelqueue-go/core/driver"
	"github.com/babelqueue/babelqueue-go/core/wire"
)

// A settle copy (a retry, a release, a dead letter, a version-gated
// forward) that the broker refuses as too large (driver.ErrTooLarge) would
// be refused on every redelivery: handing the original back would stop its
// partition for good. The App writes a bounded dead letter instead
// (wire.OversizeBody: URN, ids, both errors, sizes, where the original is
// stored, never its body), then acknowledges the original, which stays in
// its topic. With dead-lettering off the original is acknowledged without a
// copy. Either way the error is reported (OnError and slog at Error level)
// and the Settlement's Reason is wire.ReasonOversize. A bounded dead letter
// the broker refuses too is a failed write like any other: the original is
// handed back.

// settleRefused handles a failed settle write of refused bytes: a refusal
// for size settles the message by oversize, any other failure hands it
// back (writeFailed, or leftFailed when the binding already did).
func (a *App) settleRefused(ctx context.Context, msg *ReceivedMessage, env *Envelope, route, what string, refused int, err error, reason string, cause error, counted int, handedBack bool) outcome {
	if errors.Is(err, driver.ErrTooLarge) {
		return a.oversize(ctx, msg, env, route, what, refused, err, reason, cause, counted)
	}
	if handedBack {
		return a.leftFailed(ctx, msg, env, route, what, err)
	}
	return a.writeFailed(ctx, msg, env, route, what, err)
}

// oversize settles msg, whose settle copy (what, refused bytes) the broker
// refused with werr as too large; reason and cause are why it was being
// retried or dead-lettered, counted its attempts.
func (a *App) oversize(ctx context.Context, msg *ReceivedMessage, env *Envelope, route, what string, refused int, werr error, reason string, cause error, counted int) outcome {
	msg.FillHeaders()
	refusal := fmt.Errorf("%s refused as too large (%d bytes): %w", what, refused, werr)
	stErr := refusal
	if cause != nil {
		stErr = fmt.Errorf("%w; %w", cause, refusal)
	}
	attrs := a.attrs(msg, env, route, slog.String("reason", reason), slog.Int("size", len(msg.Body)), slog.Int("refused_size", refused))
	if !a.cfg.deadLetter {
		out := a.ack(ctx, msg, env, route)
		if out.err == nil {
			a.reportError(ctx, "babelqueue: message too large for the broker dropped (dead-lettering off); the original stays in its topic",
				a.deliveryErr(msg, env, route, stErr), attrs...)
		}
		return settled(out, Settlement{Outcome: OutcomeDropped, Reason: wire.ReasonOversize, Err: stErr})
	}
	o := wire.Oversize{Reason: reason, WriteError: werr.Error(), Size: len(msg.Body), RefusedSize: refused,
		Topic: msg.Queue, Partition: msg.Partition, Offset: msg.Offset}
	if env != nil {
		o.URN, o.ID, o.TraceID = env.Job, env.Meta.ID, env.TraceID
	} else {
		o.URN, _ = msg.Header(wire.HeaderJob)
		o.ID, _ = msg.Header(wire.HeaderMessageID)
		o.TraceID, _ = msg.Header(wire.HeaderTraceID)
	}
	if route != "" {
		o.URN = route
	}
	if l, ok := a.t.(driver.MessageLocator); ok {
		o.MessageID = l.MessageID(msg)
	}
	var dl wire.DeadLetter
	if cause != nil {
		dl = a.deadLetterBlock(msg, wire.ReasonOversize, cause, counted)
	} else {
		dl = wire.DeadLetter{FailedAt: a.cfg.clock.Now().UnixMilli(), OriginalQueue: msg.Queue, Attempts: counted, Lang: wire.Lang}
	}
	body := wire.OversizeBody(o, dl)
	dlq := a.deadLetterQueue(msg.Queue)
	sctx, cancel := a.settleCtx(ctx)
	defer cancel()
	r, err := a.writeFrom(sctx, driver.IntentDeadLetter, dlq, string(body), msg, deadLetterHeaders(msg), 0)
	if err != nil {
		return a.writeFailed(ctx, msg, env, route, "bounded dead-letter write to "+dlq+" (after "+what+" was refused as too large)", err)
	}
	a.reportError(ctx, "babelqueue: message too large for the broker; bounded dead letter written, the original stays in its topic",
		a.deliveryErr(msg, env, route, stErr), append(attrs, slog.String("dead_letter_queue", dlq))...)
	return a.ackAfterWrite(ctx, msg, env, route, "bounded dead letter",
		Settlement{Outcome: OutcomeDeadLettered, Reason: wire.ReasonOversize, Target: target(r, dlq), Err: stErr})
}

package babelqueue

import (
	"context"
	"errors"
	"fmt"
	"maps"

	"github.com/babelqueue/babelqueue-go/core/driver"
	"github.com/babelqueue/babelqueue-go/core/wire"
)

// BatchMessage is one message of App.PublishBatch: an envelope of URN and
// Data (see Make), headers written beside it as PublishWithHeaders writes
// them, and its own publish options (ToQueue, WithKey, WithDelay,
// WithEnvelopeOptions), applied after the batch's.
type BatchMessage struct {
	URN     string
	Data    any
	Headers map[string]string
	Options []PublishOption
}

// BatchPublishError is the error of a PublishBatch whose messages were not
// all acknowledged. Errs has one entry per message, in order: nil when the
// message was written; an *UnknownPublishError (matching ErrPublishUnknown)
// when it may be stored, to pass to App.Republish; any other error when it
// was not written (ErrBatchAborted: not attempted).
type BatchPublishError struct {
	Errs []error
}

func (e *BatchPublishError) Error() string {
	failed, unknown := 0, 0
	var first error
	for _, err := range e.Errs {
		if err == nil {
			continue
		}
		if first == nil {
			first = err
		}
		failed++
		if errors.Is(err, ErrPublishUnknown) {
			unknown++
		}
	}
	return fmt.Sprintf("babelqueue: publish batch: %d of %d messages failed (%d with an unknown outcome), first: %v",
		failed, len(e.Errs), unknown, first)
}

// Unwrap gives the error of every failed message.
func (e *BatchPublishError) Unwrap() []error {
	errs := make([]error, 0, len(e.Errs))
	for _, err := range e.Errs {
		if err != nil {
			errs = append(errs, err)
		}
	}
	return errs
}

// PublishBatch makes and encodes the envelope of every message (each once)
// and writes them all, returning meta.id of each, in order, once the
// transport acknowledged every write. opts apply to every message, before
// its own BatchMessage.Options. A transport implementing driver.BatchSender
// (the Kafka binding) gets the whole batch in one SendBatch call; any other
// gets one Send per message, in order, stopping at the first failure.
// Publish hooks run per message.
//
// Errors: a message that cannot be made (a URN breaking wire.ValidURN, a
// blank queue, an unsupported delay, key or headers, data that does not
// encode) fails the whole call
// before anything is written. Once writing started, an error is a
// *BatchPublishError saying, per message, whether it was written, may be
// stored (Republish it), or was not written; ids are then returned too, so
// that each entry of Errs can be matched to its meta.id. Messages of one
// partition keep their order; nothing is written again behind the
// caller's back.
func (a *App) PublishBatch(ctx context.Context, msgs []BatchMessage, opts ...PublishOption) ([]string, error) {
	if len(msgs) == 0 {
		return nil, nil
	}
	ids := make([]string, len(msgs))
	slab := make([]driver.Outgoing, len(msgs))
	outs := make([]*driver.Outgoing, len(msgs))
	for i := range msgs {
		out, id, err := a.batchOutgoing(&msgs[i], opts)
		if err != nil {
			return nil, fmt.Errorf("babelqueue: publish batch message %d: %w", i, err)
		}
		slab[i] = out
		outs[i], ids[i] = &slab[i], id
	}
	errs := a.sendBatch(ctx, outs)
	if errs == nil {
		return ids, nil
	}
	for i, err := range errs {
		if err != nil {
			errs[i] = a.publishError(outs[i], ids[i], err)
		}
	}
	return ids, &BatchPublishError{Errs: errs}
}

// batchOutgoing makes the write of m, with the batch options first.
func (a *App) batchOutgoing(m *BatchMessage, batch []PublishOption) (driver.Outgoing, string, error) {
	var p publishConfig
	for _, o := range batch {
		if o != nil {
			o(&p)
		}
	}
	for _, o := range m.Options {
		if o != nil {
			o(&p)
		}
	}
	queue := a.cfg.defaultQueue
	if p.queue != "" {
		queue = p.queue
	}
	if err := wire.ValidURN(m.URN); err != nil {
		return driver.Outgoing{}, "", fmt.Errorf("%w: %w", ErrInvalidOption, err)
	}
	switch {
	case wire.IsBlank(queue):
		return driver.Outgoing{}, "", invalid("publish queue is blank")
	case p.delay > 0 && !a.features.Delay:
		return driver.Outgoing{}, "", fmt.Errorf("%s to %s: transport %T has no delayed publish: %w", m.URN, queue, a.t, ErrDelayUnsupported)
	case len(m.Headers) > 0 && !a.features.Headers:
		return driver.Outgoing{}, "", fmt.Errorf("%s to %s: transport %T writes no headers: %w", m.URN, queue, a.t, errors.ErrUnsupported)
	case p.key != nil && !a.features.Keys:
		return driver.Outgoing{}, "", fmt.Errorf("%s to %s: transport %T writes no keys: %w", m.URN, queue, a.t, errors.ErrUnsupported)
	}
	env, err := Make(m.URN, m.Data, append(p.envelope, WithQueue(queue))...)
	if err != nil {
		return driver.Outgoing{}, "", fmt.Errorf("%s: %w", m.URN, err)
	}
	raw, err := env.Encode()
	if err != nil {
		return driver.Outgoing{}, "", fmt.Errorf("%s: %w", m.URN, err)
	}
	out := driver.Outgoing{Intent: driver.IntentPublish, Queue: queue, Body: string(raw), Key: p.key, Headers: m.Headers, Delay: p.delay}
	if proj, ok := wire.ProjectFresh(env); ok {
		driver.SetProjection(&out, proj)
	}
	if len(a.cfg.hooks.publish) > 0 {
		// The hooks may add headers; the caller's map stays untouched.
		out.Headers = maps.Clone(m.Headers)
	}
	return out, env.Meta.ID, nil
}

// sendBatch writes outs, between the publish hooks of each, and returns
// nil when every write was acknowledged, else the error of each (nil for
// a write acknowledged).
func (a *App) sendBatch(ctx context.Context, outs []*driver.Outgoing) []error {
	bs, ok := a.t.(driver.BatchSender)
	if !ok {
		for i, out := range outs {
			if _, err := a.send(ctx, out); err != nil {
				errs := make([]error, len(outs))
				errs[i] = err
				for j := i + 1; j < len(outs); j++ {
					errs[j] = ErrBatchAborted
				}
				return errs
			}
		}
		return nil
	}
	hooked := len(a.cfg.hooks.publish) > 0 || len(a.cfg.hooks.published) > 0
	var ctxs []context.Context
	if hooked {
		ctxs = make([]context.Context, len(outs))
		for i, out := range outs {
			ctxs[i] = a.cfg.hooks.onPublish(ctx, out)
		}
	}
	receipts, err := bs.SendBatch(ctx, outs)
	var errs []error
	if err != nil {
		var each driver.SendErrors
		if errors.As(err, &each) && len(each) == len(outs) {
			errs = append([]error(nil), each...)
		} else {
			errs = make([]error, len(outs))
			for i := range errs {
				errs[i] = err
			}
		}
	}
	if hooked {
		for i, out := range outs {
			var r driver.Receipt
			if i < len(receipts) {
				r = receipts[i]
			}
			var e error
			if errs != nil {
				e = errs[i]
			}
			a.cfg.hooks.onPublished(ctxs[i], out, r, e)
		}
	}
	for _, e := range errs {
		if e != nil {
			return errs
		}
	}
	return nil
}

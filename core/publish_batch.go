package babelqueue

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strconv"
	"sync"
	"unsafe"

	"github.com/babelqueue/babelqueue-go/core/driver"
	"github.com/babelqueue/babelqueue-go/core/wire"
)

// BatchMessage is one message of App.PublishBatch: an envelope of URN and
// Data, its headers and its own publish options. The envelope is made as
// Make makes it, the headers are written as PublishWithHeaders writes them,
// and the options (ToQueue, WithKey, WithDelay, WithEnvelopeOptions) apply
// after the batch's.
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

// PublishBatch writes every message and returns meta.id of each, in order,
// once the transport acknowledged every write. It makes and encodes each
// envelope once. opts apply to every message, before its own
// BatchMessage.Options. A transport implementing driver.BatchSender (the
// Kafka binding) gets the whole batch in one SendBatch call; any other gets
// one Send per message, in order, stopping at the first failure. Publish
// hooks run per message.
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
	reuse := a.releasesBatches()
	s := newBatchSlabs(len(msgs), reuse)
	slab, outs := s.outs, s.ptrs
	b := newBatchBuilder(opts)
	b.bodies = s.bodies
	for i := range msgs {
		id, err := a.batchOutgoing(&slab[i], &msgs[i], b, len(msgs)-i)
		if err != nil {
			b.putMaker()
			if reuse {
				s.release(b.bodies) // nothing was handed to the transport
			}
			return nil, within("publish batch message "+strconv.Itoa(i), err)
		}
		outs[i], ids[i] = &slab[i], id
	}
	b.putMaker() // every envelope is encoded: nothing refers to the Maker's buffers
	errs := a.sendBatch(ctx, outs)
	if errs == nil {
		if reuse {
			s.release(b.bodies) // acknowledged: the transport keeps nothing of it
		}
		return ids, nil
	}
	for i, err := range errs {
		if err != nil {
			errs[i] = a.publishError(outs[i], ids[i], err)
		}
	}
	return ids, &BatchPublishError{Errs: errs}
}

// batchBuilder holds what the messages of one PublishBatch share: the
// batch options applied once, the envelope options of a message that has
// none of its own (per queue), and the buffer the bodies are encoded into,
// back to back.
type batchBuilder struct {
	opts     []PublishOption
	base     publishConfig
	makeOpts []MakeOption // base.envelope and WithQueue(makeOf)
	makeOf   string       // the queue makeOpts was built for
	validURN string       // the URN last found valid
	bodies   []byte
	maker    *wire.Maker // the envelopes, their ids and data, a few allocations per batch
}

// makers keeps the Makers of finished batches: a Maker's random bytes read
// ahead and the rest of its id block serve the next batch (its id blocks
// are never rewritten, so the ids it handed out stay valid).
var makers = sync.Pool{New: func() any { return new(wire.Maker) }}

func newBatchBuilder(opts []PublishOption) *batchBuilder {
	b := &batchBuilder{opts: opts, maker: makers.Get().(*wire.Maker)}
	for _, o := range opts {
		if o != nil {
			o(&b.base)
		}
	}
	return b
}

// putMaker gives b's Maker back for another batch; b makes no envelope
// afterwards.
func (b *batchBuilder) putMaker() {
	makers.Put(b.maker)
	b.maker = nil
}

// config returns the publish settings of m: the batch's, then m's own.
func (b *batchBuilder) config(m *BatchMessage) publishConfig {
	if len(m.Options) == 0 {
		return b.base
	}
	var p publishConfig
	for _, o := range b.opts {
		if o != nil {
			o(&p)
		}
	}
	for _, o := range m.Options {
		if o != nil {
			o(&p)
		}
	}
	return p
}

// makeOptions returns the envelope options of a message with settings p
// published to queue; own tells whether m had publish options of its own.
func (b *batchBuilder) makeOptions(p *publishConfig, queue string, own bool) []MakeOption {
	if own {
		return append(p.envelope[:len(p.envelope):len(p.envelope)], WithQueue(queue))
	}
	if b.makeOpts == nil || b.makeOf != queue {
		b.makeOpts = append(b.base.envelope[:len(b.base.envelope):len(b.base.envelope)], WithQueue(queue))
		b.makeOf = queue
	}
	return b.makeOpts
}

// encode appends the body of env to the batch's buffer and returns it as
// a string viewing that buffer; left tells how many bodies are still to
// come, so that a new buffer is sized for them. Bytes once written are
// not changed while the batch lasts: a grown buffer is a new one (a
// buffer is reused only once its batch was acknowledged, batchSlabs).
func (b *batchBuilder) encode(env *Envelope, left int) (string, error) {
	hint := env.EncodedSizeHint()
	if cap(b.bodies)-len(b.bodies) < hint {
		b.bodies = make([]byte, 0, max(hint, min(hint*left, maxBatchBuffer)))
	}
	start := len(b.bodies)
	out, err := env.AppendEncode(b.bodies)
	if err != nil {
		return "", err
	}
	b.bodies = out
	body := out[start:]
	return unsafe.String(unsafe.SliceData(body), len(body)), nil
}

// maxBatchBuffer caps one body buffer of a PublishBatch; a batch whose
// bodies need more takes another.
const maxBatchBuffer = 1 << 20

// batchOutgoing fills out with the write of m (left: messages still to
// build, m included) and returns its meta.id.
func (a *App) batchOutgoing(out *driver.Outgoing, m *BatchMessage, b *batchBuilder, left int) (string, error) {
	p := b.config(m)
	queue := a.cfg.defaultQueue
	if p.queue != "" {
		queue = p.queue
	}
	if wire.IsBlank(queue) {
		return "", invalid("publish queue is blank")
	}
	if m.URN == "" || m.URN != b.validURN {
		if err := wire.ValidURN(m.URN); err != nil {
			return "", err // an argument, not an option
		}
		b.validURN = m.URN // a batch mostly repeats one URN
	}
	switch {
	case p.delay > 0 && !a.features.Delay:
		return "", fmt.Errorf("%s to %s: transport %T has no delayed publish: %w", m.URN, queue, a.t, ErrDelayUnsupported)
	case len(m.Headers) > 0 && !a.features.Headers:
		return "", fmt.Errorf("%s to %s: transport %T writes no headers: %w", m.URN, queue, a.t, errors.ErrUnsupported)
	case p.key != nil && !a.features.Keys:
		return "", fmt.Errorf("%s to %s: transport %T writes no keys: %w", m.URN, queue, a.t, errors.ErrUnsupported)
	}
	env, err := b.maker.Make(left, m.URN, m.Data, b.makeOptions(&p, queue, len(m.Options) > 0)...)
	if err != nil {
		return "", fmt.Errorf("%s: %w", m.URN, err)
	}
	if err := a.validatePayload(m.URN, env); err != nil {
		return "", fmt.Errorf("%s to %s: %w", m.URN, queue, err)
	}
	if env, err = a.protectOutgoing(m.URN, env); err != nil {
		return "", fmt.Errorf("%s to %s: %w", m.URN, queue, err)
	}
	body, err := b.encode(env, left)
	if err != nil {
		return "", fmt.Errorf("%s: %w", m.URN, err)
	}
	*out = driver.Outgoing{Intent: driver.IntentPublish, Queue: queue, Body: body, Key: p.key, Headers: m.Headers, Delay: p.delay}
	if proj, ok := wire.ProjectFresh(env); ok {
		driver.SetProjection(out, proj)
	}
	if len(a.cfg.hooks.publish) > 0 {
		// The hooks may add headers; the caller's map stays untouched.
		out.Headers = maps.Clone(m.Headers)
	}
	return env.Meta.ID, nil
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

package redrive

import (
	"context"
	"errors"
	"fmt"
	"maps"

	"github.com/babelqueue/babelqueue-go/core/driver"
	"github.com/babelqueue/babelqueue-go/core/wire"
)

// Outcome is what Run did with one message.
type Outcome string

const (
	// Moved: republished to its target, then removed from the DLQ.
	Moved Outcome = "moved"
	// WouldMove: a dry run would have moved it.
	WouldMove Outcome = "would_move"
	// Unselected: a selector declined it; it stays.
	Unselected Outcome = "unselected"
	// Undecodable: the body is not an envelope (a poison dead
	// letter, say); it stays.
	Undecodable Outcome = "undecodable"
	// UnsupportedVersion: the version gate rejects it (its
	// bq-schema-version header or meta.schema_version is not 1); it stays.
	UnsupportedVersion Outcome = "unsupported_version"
	// NoTarget: no target queue is known (or it is the DLQ itself);
	// it stays.
	NoTarget Outcome = "no_target"
	// Guarded: the replay-count guard holds it back (it was already
	// redriven WithMaxRedrives times); it stays.
	Guarded Outcome = "guarded"
	// AlreadyMoved: an interrupted run had already written its copy
	// to the target; this run settled it without writing it again.
	AlreadyMoved Outcome = "already_moved"
	// AlreadyKept: an interrupted run had already written it back to the
	// tail of the DLQ, so this run passed it without writing it again. The
	// copy at the tail stays and is examined in its turn.
	AlreadyKept Outcome = "already_kept"
	// Failed: a write or acknowledge failed; Err says which, and
	// Disposition where the message is.
	Failed Outcome = "failed"
	// Discarded: a discard run (WithDiscard) settled it in the DLQ
	// without writing it anywhere; the Item carries its body.
	Discarded Outcome = "discarded"
	// WouldDiscard: a dry discard run would have discarded it.
	WouldDiscard Outcome = "would_discard"
)

// Disposition says where a message Run read was left.
type Disposition string

const (
	// DispositionRemoved: acknowledged in the DLQ after its republish.
	DispositionRemoved Disposition = "removed"
	// DispositionRestored: written back to the tail of the DLQ (body, key
	// and headers kept), then the read copy acknowledged.
	DispositionRestored Disposition = "restored"
	// DispositionRewound: handed back in place by Rewind.
	DispositionRewound Disposition = "rewound"
	// DispositionNacked: handed back by a negative acknowledge.
	DispositionNacked Disposition = "nacked"
	// DispositionReserved: left reserved, for the transport to redeliver.
	DispositionReserved Disposition = "reserved"
	// DispositionDuplicated: the republish succeeded but the DLQ copy could
	// not be acknowledged, so it stays in the DLQ as well.
	DispositionDuplicated Disposition = "duplicated"
)

// Item reports one message read by Run.
type Item struct {
	// MessageID, URN and Reason (dead_letter.reason) are empty when the
	// body could not be decoded.
	MessageID string
	URN       string
	Reason    string
	// Target is the queue it was (or would have been) moved to.
	Target string
	// Position is where the binding read it in the DLQ (for example
	// "<partition>/<offset>" on Kafka, the message ID on Pulsar); empty
	// when the binding has none to report.
	Position string
	// Redrives is its bq-redrive-count as read.
	Redrives    int
	Outcome     Outcome
	Disposition Disposition
	// Err is the failure of a Failed item, or why a message stayed (for
	// a discarded undecodable or version-gated one: why it was unreadable).
	Err error
	// Body, Key and Headers are the dead letter as read, set on Discarded
	// and WouldDiscard items only, so that a record of a discard keeps
	// what left the DLQ.
	Body    string
	Key     []byte
	Headers map[string]string
}

// Result reports a Run run.
type Result struct {
	// DryRun is true for a run with WithDryRun.
	DryRun bool
	// Resumed reports a run that continued the durable progress of an
	// earlier one (a binding with a cursor).
	Resumed bool
	// Examined counts the messages read, Moved those moved (or, in a dry
	// run, that would have been), Kept those that stay in the DLQ, and
	// Recovered those an interrupted run had already moved
	// (AlreadyMoved). Discarded counts those a discard run discarded (or,
	// in a dry run, would have).
	Examined, Moved, Kept, Recovered, Discarded int
	// Items has one entry per message read, in read order, at most
	// MaxItems.
	Items []Item
	// Truncated reports a dry run that stopped after MaxHeld
	// messages.
	Truncated bool
}

func (r *Result) add(it Item) {
	r.Examined++
	switch it.Outcome {
	case Moved, WouldMove:
		r.Moved++
	case AlreadyMoved:
		r.Recovered++
	case Discarded, WouldDiscard:
		r.Discarded++
	default:
		if it.Disposition != DispositionRemoved {
			r.Kept++
		}
	}
	if len(r.Items) < MaxItems {
		r.Items = append(r.Items, it)
	}
}

// Run moves the dead letters of dlq back to work. Each message goes to
// WithTarget, else its dead_letter.original_queue, else its
// meta.queue, as wire.ClearDeadLetter makes it: the dead_letter block removed
// and attempts 0, every other byte unchanged, written as driver.IntentRedrive
// with the key kept.
//
// Nothing in the DLQ is lost or duplicated by a run:
//   - a message is acknowledged in the DLQ only after its republish was
//     acknowledged;
//   - a message that stays (unselected, undecodable, version-gated, with no
//     target) must be handed back without blocking the ones behind it and
//     without letting a later acknowledge pass it (a Kafka commit is
//     cumulative). It is therefore written back to the tail of the DLQ
//     (IntentRestore: body, headers and key exactly) and only then
//     acknowledged. The trade-off: kept messages change
//     place (they move behind the others) and get a new broker position.
//     The run stops when it reads again a message it wrote back, so every
//     message is examined once;
//   - a dry run writes nothing: it holds every message it reads and, at
//     the end, hands them back in reverse order (HandBack; a transport
//     whose HandBack does nothing has them written back as above). It
//     holds at most MaxHeld messages.
//
// A discard run (WithDiscard) writes nothing to a target: a selected dead
// letter is acknowledged in the DLQ (reported as Discarded, with its body)
// and the others stay as above.
//
// A failed write stops the run: the message concerned is handed back and
// the error returned wraps driver.ErrSettle. The result,
// never nil, lists what happened to each message read. The run ends when
// the DLQ is empty (a Pop waited the poll timeout for nothing), when
// WithMax is reached, or when ctx ends (its error is returned).
func Run(ctx context.Context, t driver.Transport, dlq string, opts ...Option) (*Result, error) {
	plan := NewPlan(opts...)
	res := &Result{DryRun: plan.DryRun}
	if err := plan.check(t, dlq); err != nil {
		return res, err
	}
	if rd, ok := t.(Redriver); ok {
		out, err := rd.Redrive(ctx, dlq, plan.reporting(ctx, dlq))
		if out == nil {
			out = res
		}
		return out, err
	}
	return RunPlan(ctx, t, dlq, plan)
}

// RunPlan is the redrive Run runs on a transport that is not a
// Redriver, with the guarantees Run lists, given a plan instead of
// options. It never delegates to a Redriver: a decorator that implements
// Redriver for the transport it wraps calls it when the wrapped transport
// has no redrive of its own.
func RunPlan(ctx context.Context, t driver.Transport, dlq string, plan Plan) (*Result, error) {
	res := &Result{DryRun: plan.DryRun}
	if err := plan.check(t, dlq); err != nil {
		return res, err
	}
	if plan.PollTimeout <= 0 {
		plan.PollTimeout = DefaultPollTimeout
	}
	plan = plan.reporting(ctx, dlq)
	if plan.OnTotal != nil {
		plan.OnTotal(-1)
	}
	r := &redriver{t: t, mode: t.Features().HandBack, dlq: dlq, plan: plan, res: res, written: make(map[string]bool)}
	err := r.run(ctx)
	if plan.DryRun {
		// Handing back must finish even when ctx ended the run.
		err = errors.Join(err, r.handBackHeld(context.WithoutCancel(ctx)))
	}
	return res, err
}

type redriver struct {
	t       driver.Transport
	mode    driver.HandBackMode
	dlq     string
	plan    Plan
	res     *Result
	held    []*driver.ReceivedMessage // dry run: read, not yet handed back
	written map[string]bool           // bodies this run wrote back to the DLQ
}

func (r *redriver) run(ctx context.Context) error {
	for {
		if r.plan.Max > 0 && r.res.Moved+r.res.Discarded >= r.plan.Max {
			return nil
		}
		if r.plan.DryRun && len(r.held) >= MaxHeld {
			r.res.Truncated = true
			return nil
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		msg, err := r.t.Receive(ctx, r.dlq, r.plan.PollTimeout)
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return fmt.Errorf("babelqueue: redrive %s: pop: %w", r.dlq, err)
		}
		if msg == nil {
			return nil
		}
		if msg.Queue == "" {
			msg.Queue = r.dlq
		}
		if r.written[msg.Body] {
			// Every message of the run has been seen: hand this one back.
			_, err := r.handBack(context.WithoutCancel(ctx), msg)
			return err
		}
		if err := r.one(ctx, msg); err != nil {
			return err
		}
	}
}

// one examines and settles one message.
func (r *redriver) one(ctx context.Context, msg *driver.ReceivedMessage) error {
	it, env := r.plan.Examine(r.dlq, msg)
	if r.plan.DryRun {
		it.Outcome = DryOutcome(it.Outcome)
	}
	if r.plan.DryRun {
		r.held = append(r.held, msg)
		it.Disposition = DispositionReserved // updated when handed back
		r.plan.Report(r.res, it)
		return nil
	}
	if it.Outcome == Discarded {
		d, err := r.discard(ctx, msg)
		it.Disposition = d
		if err != nil {
			it.Outcome, it.Err = Failed, err
		}
		r.plan.Report(r.res, it)
		return err
	}
	if it.Outcome != Moved {
		d, err := r.keep(ctx, msg)
		it.Disposition = d
		if err != nil {
			it.Outcome, it.Err = Failed, err
		}
		r.plan.Report(r.res, it)
		return err
	}
	d, err := r.move(ctx, msg, env, it.Target)
	it.Disposition = d
	if err != nil {
		if d != DispositionDuplicated {
			it.Outcome = Failed
		}
		it.Err = err
	}
	r.plan.Report(r.res, it)
	return err
}

// move republishes the cleared body to target, then acknowledges msg.
func (r *redriver) move(ctx context.Context, msg *driver.ReceivedMessage, env *wire.Envelope, target string) (Disposition, error) {
	cleared, err := wire.ClearDeadLetter([]byte(msg.Body))
	if err != nil {
		// Should not happen for a decoded envelope; keep the message.
		d, kerr := r.keep(ctx, msg)
		return d, errors.Join(fmt.Errorf("babelqueue: redrive %s: clearing the dead letter: %w", env.Meta.ID, err), kerr)
	}
	body := string(cleared)
	if err := r.republish(ctx, target, body, msg); err != nil {
		d := r.unsettle(ctx, msg)
		return d, fmt.Errorf("%w: redrive %s to %s: %w", driver.ErrSettle, env.Meta.ID, target, err)
	}
	if err := r.t.Ack(ctx, msg); err != nil {
		r.unsettle(ctx, msg)
		return DispositionDuplicated, fmt.Errorf("%w: redrive %s: republished to %s but the dead letter was not acknowledged and will be read again: %w",
			driver.ErrSettle, env.Meta.ID, target, err)
	}
	return DispositionRemoved, nil
}

// discard acknowledges msg without writing it anywhere.
func (r *redriver) discard(ctx context.Context, msg *driver.ReceivedMessage) (Disposition, error) {
	if err := r.t.Ack(ctx, msg); err != nil {
		return r.unsettle(ctx, msg), fmt.Errorf("%w: redrive: discarding a dead letter of %s: %w", driver.ErrSettle, r.dlq, err)
	}
	return DispositionRemoved, nil
}

// DryOutcome is the outcome a dry run reports for o: WouldMove for Moved,
// WouldDiscard for Discarded, o otherwise.
func DryOutcome(o Outcome) Outcome {
	switch o {
	case Moved:
		return WouldMove
	case Discarded:
		return WouldDiscard
	}
	return o
}

// republish writes the moved copy with the key and the plan's headers
// (the replay bypass, when set, needs headers and was checked by Run).
func (r *redriver) republish(ctx context.Context, target, body string, from *driver.ReceivedMessage) error {
	from.FillHeaders()
	_, err := r.t.Send(ctx, &driver.Outgoing{Intent: driver.IntentRedrive, Queue: target, Body: body, From: from, Headers: r.plan.MovedHeaders(from)})
	return err
}

// keep writes msg back to the tail of the DLQ, then acknowledges it.
func (r *redriver) keep(ctx context.Context, msg *driver.ReceivedMessage) (Disposition, error) {
	if err := r.restore(ctx, msg); err != nil {
		d := r.unsettle(ctx, msg)
		return d, fmt.Errorf("%w: redrive: writing a kept message back to %s: %w", driver.ErrSettle, r.dlq, err)
	}
	r.written[msg.Body] = true
	if err := r.t.Ack(ctx, msg); err != nil {
		r.unsettle(ctx, msg)
		return DispositionDuplicated, fmt.Errorf("%w: redrive: a kept message was written back to %s but its read copy was not acknowledged: %w", driver.ErrSettle, r.dlq, err)
	}
	return DispositionRestored, nil
}

// restore writes msg, unchanged, to the tail of the DLQ.
func (r *redriver) restore(ctx context.Context, msg *driver.ReceivedMessage) error {
	msg.FillHeaders()
	_, err := r.t.Send(ctx, &driver.Outgoing{Intent: driver.IntentRestore, Queue: r.dlq, Body: msg.Body, From: msg, Headers: maps.Clone(msg.Headers)})
	return err
}

// unsettle hands msg back without writing (driver.Transport.HandBack); it is left
// reserved when the transport's HandBack does nothing.
func (r *redriver) unsettle(ctx context.Context, msg *driver.ReceivedMessage) Disposition {
	ctx = context.WithoutCancel(ctx)
	if r.mode == driver.HandBackNone || r.t.HandBack(ctx, msg) != nil {
		return DispositionReserved
	}
	if r.mode == driver.HandBackNack {
		return DispositionNacked
	}
	return DispositionRewound
}

// handBack returns msg to the DLQ untouched when the transport can, else
// writes it back.
func (r *redriver) handBack(ctx context.Context, msg *driver.ReceivedMessage) (Disposition, error) {
	if d := r.unsettle(ctx, msg); d != DispositionReserved {
		return d, nil
	}
	return r.keep(ctx, msg)
}

// handBackHeld hands back the messages a dry run held, last read first, so
// that a transport that puts them at the head keeps their order.
func (r *redriver) handBackHeld(ctx context.Context) error {
	var errs []error
	base := r.res.Examined - len(r.held) // index of the first held item
	for i := len(r.held) - 1; i >= 0; i-- {
		d, err := r.handBack(ctx, r.held[i])
		if j := base + i; j >= 0 && j < len(r.res.Items) {
			r.res.Items[j].Disposition = d
			if err != nil {
				r.res.Items[j].Err = err
			}
		}
		if err != nil {
			errs = append(errs, err)
		}
	}
	r.held = nil
	return errors.Join(errs...)
}

// Redriver is implemented by a transport that runs a redrive itself, with
// its broker's own guarantees (a durable cursor, a journal per batch).
// Run hands such a transport the whole run, with the plan its options
// make. An implementation must keep the promises of Redrive: nothing in the
// dead-letter queue lost or duplicated by a run, whatever point it is
// interrupted at; it reports each examined message to plan.Progress.
type Redriver interface {
	Redrive(ctx context.Context, dlq string, plan Plan) (*Result, error)
}

package babelqueue

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"
)

// Redrive limits.
const (
	// DefaultRedrivePollTimeout is how long Redrive waits for the next
	// dead letter before it decides the queue is done.
	DefaultRedrivePollTimeout = time.Second
	// MaxRedriveHeld bounds how many messages a dry run holds reserved
	// before it stops (RedriveResult.Truncated).
	MaxRedriveHeld = 10000
	// MaxRedriveItems bounds RedriveResult.Items; the counts stay exact.
	MaxRedriveItems = 10000
)

// RedriveOption configures Redrive.
type RedriveOption func(*redriveConfig)

type redriveConfig struct {
	target      string
	max         int
	dryRun      bool
	selectors   []func(*Envelope) bool
	replay      bool
	pollTimeout time.Duration
}

// WithRedriveTarget sends every redriven message to queue instead of its
// dead_letter.original_queue (or, without one, its meta.queue).
func WithRedriveTarget(queue string) RedriveOption {
	return func(c *redriveConfig) { c.target = queue }
}

// WithRedriveMax stops the run once n messages were moved (in a dry run:
// would have been moved). n <= 0 means no limit, the default.
func WithRedriveMax(n int) RedriveOption {
	return func(c *redriveConfig) { c.max = n }
}

// WithRedriveDryRun makes the run write nothing: it reports what it would
// move, and hands every message it read back to the dead-letter queue
// untouched (see Redrive).
func WithRedriveDryRun() RedriveOption {
	return func(c *redriveConfig) { c.dryRun = true }
}

// WithRedriveSelector moves only the messages for which fn returns true;
// the others stay in the dead-letter queue. fn receives the decoded dead
// letter (env.DeadLetter holds its reason, failed_at, original queue...).
// Several selectors must all return true. SelectURN, SelectReason and
// SelectFailedBetween build common ones.
func WithRedriveSelector(fn func(env *Envelope) bool) RedriveOption {
	return func(c *redriveConfig) {
		if fn != nil {
			c.selectors = append(c.selectors, fn)
		}
	}
}

// WithRedriveReplayBypass stamps every redriven message with the
// bq-replay-bypass header, so that its handler sees IsReplay(ctx) and
// BypassExternalEffects skips the effects already done. It needs a
// transport with HeaderRepublisher (the key is kept) or HeaderPublisher
// (the key is lost); Redrive fails with ErrInvalidOption otherwise.
func WithRedriveReplayBypass() RedriveOption {
	return func(c *redriveConfig) { c.replay = true }
}

// WithRedrivePollTimeout sets how long Redrive waits for the next dead
// letter before it ends (default DefaultRedrivePollTimeout).
func WithRedrivePollTimeout(d time.Duration) RedriveOption {
	return func(c *redriveConfig) {
		if d > 0 {
			c.pollTimeout = d
		}
	}
}

// SelectURN returns a selector of the messages whose URN is one of urns.
func SelectURN(urns ...string) func(*Envelope) bool {
	return func(env *Envelope) bool { return slices.Contains(urns, env.URN()) }
}

// SelectReason returns a selector of the dead letters whose
// dead_letter.reason is one of reasons (ReasonFailed, ReasonUnknownURN...).
// A message without a dead_letter block is not selected.
func SelectReason(reasons ...string) func(*Envelope) bool {
	return func(env *Envelope) bool {
		return env.DeadLetter != nil && slices.Contains(reasons, env.DeadLetter.Reason)
	}
}

// SelectFailedBetween returns a selector of the dead letters whose
// dead_letter.failed_at is in [from, to). A zero from or to leaves that
// side open. A message without a dead_letter block is not selected.
func SelectFailedBetween(from, to time.Time) func(*Envelope) bool {
	return func(env *Envelope) bool {
		if env.DeadLetter == nil {
			return false
		}
		at := time.UnixMilli(env.DeadLetter.FailedAt)
		return (from.IsZero() || !at.Before(from)) && (to.IsZero() || at.Before(to))
	}
}

// RedriveOutcome is what Redrive did with one message.
type RedriveOutcome string

const (
	// RedriveMoved: republished to its target, then removed from the DLQ.
	RedriveMoved RedriveOutcome = "moved"
	// RedriveWouldMove: a dry run would have moved it.
	RedriveWouldMove RedriveOutcome = "would_move"
	// RedriveUnselected: a selector declined it; it stays.
	RedriveUnselected RedriveOutcome = "unselected"
	// RedriveUndecodable: the body is not an envelope (a poison dead
	// letter, say); it stays.
	RedriveUndecodable RedriveOutcome = "undecodable"
	// RedriveUnsupportedVersion: the version gate rejects it (its
	// bq-schema-version header or meta.schema_version is not 1); it stays.
	RedriveUnsupportedVersion RedriveOutcome = "unsupported_version"
	// RedriveNoTarget: no target queue is known (or it is the DLQ itself);
	// it stays.
	RedriveNoTarget RedriveOutcome = "no_target"
	// RedriveFailed: a write or acknowledge failed; Err says which, and
	// Disposition where the message is.
	RedriveFailed RedriveOutcome = "failed"
)

// RedriveDisposition says where a message Redrive read was left.
type RedriveDisposition string

const (
	// DispositionRemoved: acknowledged in the DLQ after its republish.
	DispositionRemoved RedriveDisposition = "removed"
	// DispositionRestored: written back to the tail of the DLQ (body, key
	// and headers kept), then the read copy acknowledged.
	DispositionRestored RedriveDisposition = "restored"
	// DispositionRewound: handed back in place by Rewind.
	DispositionRewound RedriveDisposition = "rewound"
	// DispositionNacked: handed back by a negative acknowledge.
	DispositionNacked RedriveDisposition = "nacked"
	// DispositionReserved: left reserved, for the transport to redeliver.
	DispositionReserved RedriveDisposition = "reserved"
	// DispositionDuplicated: the republish succeeded but the DLQ copy could
	// not be acknowledged, so it stays in the DLQ as well.
	DispositionDuplicated RedriveDisposition = "duplicated"
)

// RedriveItem reports one message read by Redrive.
type RedriveItem struct {
	// MessageID, URN and Reason (dead_letter.reason) are empty when the
	// body could not be decoded.
	MessageID string
	URN       string
	Reason    string
	// Target is the queue it was (or would have been) moved to.
	Target      string
	Outcome     RedriveOutcome
	Disposition RedriveDisposition
	// Err is the failure of a RedriveFailed item, or why a message stayed.
	Err error
}

// RedriveResult reports a Redrive run.
type RedriveResult struct {
	// DryRun is true for a run with WithRedriveDryRun.
	DryRun bool
	// Examined counts the messages read, Moved those moved (or, in a dry
	// run, that would have been), Kept those that stay in the DLQ.
	Examined, Moved, Kept int
	// Items has one entry per message read, in read order, at most
	// MaxRedriveItems.
	Items []RedriveItem
	// Truncated reports a dry run that stopped after MaxRedriveHeld
	// messages.
	Truncated bool
}

func (r *RedriveResult) add(it RedriveItem) {
	r.Examined++
	switch it.Outcome {
	case RedriveMoved, RedriveWouldMove:
		r.Moved++
	default:
		if it.Disposition != DispositionRemoved {
			r.Kept++
		}
	}
	if len(r.Items) < MaxRedriveItems {
		r.Items = append(r.Items, it)
	}
}

// Redrive moves the dead letters of dlq back to work. Each message goes to
// WithRedriveTarget, else its dead_letter.original_queue, else its
// meta.queue, as ClearDeadLetter makes it: the dead_letter block removed
// and attempts 0, every other byte unchanged. The key is kept
// (KeyedRepublisher, or HeaderRepublisher with the replay bypass).
//
// Nothing in the DLQ is lost or duplicated by a run:
//   - a message is acknowledged in the DLQ only after its republish was
//     acknowledged;
//   - a message that stays (unselected, undecodable, version-gated, with no
//     target) must be handed back without blocking the ones behind it and
//     without letting a later acknowledge pass it (a Kafka commit is
//     cumulative). It is therefore written back to the tail of the DLQ —
//     by Forward (body, headers and key exactly), else PublishFrom (which
//     a binding treats as a verbatim restore), else a header republish —
//     and only then acknowledged. The trade-off: kept messages change
//     place (they move behind the others) and get a new broker position.
//     The run stops when it reads again a message it wrote back, so every
//     message is examined once;
//   - a dry run writes nothing: it holds every message it reads and, at
//     the end, hands them back in reverse order by Rewind, else Nack (else,
//     on a transport with neither, it writes them back as above). It holds
//     at most MaxRedriveHeld messages.
//
// A failed write stops the run: the message concerned is handed back
// (Rewind, else Nack) and the error returned wraps ErrSettle. The result,
// never nil, lists what happened to each message read. The run ends when
// the DLQ is empty (a Pop waited the poll timeout for nothing), when
// WithRedriveMax is reached, or when ctx ends (its error is returned).
func Redrive(ctx context.Context, t Transport, dlq string, opts ...RedriveOption) (*RedriveResult, error) {
	cfg := redriveConfig{pollTimeout: DefaultRedrivePollTimeout}
	for _, o := range opts {
		if o != nil {
			o(&cfg)
		}
	}
	res := &RedriveResult{DryRun: cfg.dryRun}
	if t == nil {
		return res, invalid("redrive: transport is nil")
	}
	if IsBlank(dlq) {
		return res, invalid("redrive: dead-letter queue is blank")
	}
	if cfg.replay {
		_, hr := t.(HeaderRepublisher)
		_, hp := t.(HeaderPublisher)
		if !hr && !hp {
			return res, invalid("redrive: replay bypass needs a transport that publishes headers, %T does not", t)
		}
	}
	r := &redriver{t: t, dlq: dlq, cfg: cfg, res: res, written: make(map[string]bool)}
	err := r.run(ctx)
	if cfg.dryRun {
		// Handing back must finish even when ctx ended the run.
		err = errors.Join(err, r.handBackHeld(context.WithoutCancel(ctx)))
	}
	return res, err
}

type redriver struct {
	t       Transport
	dlq     string
	cfg     redriveConfig
	res     *RedriveResult
	held    []*ReceivedMessage // dry run: read, not yet handed back
	written map[string]bool    // bodies this run wrote back to the DLQ
}

func (r *redriver) run(ctx context.Context) error {
	for {
		if r.cfg.max > 0 && r.res.Moved >= r.cfg.max {
			return nil
		}
		if r.cfg.dryRun && len(r.held) >= MaxRedriveHeld {
			r.res.Truncated = true
			return nil
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		msg, err := r.t.Pop(ctx, r.dlq, r.cfg.pollTimeout)
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
func (r *redriver) one(ctx context.Context, msg *ReceivedMessage) error {
	it, env := r.examine(msg)
	if it.Outcome == RedriveMoved && r.cfg.dryRun {
		it.Outcome = RedriveWouldMove
	}
	if r.cfg.dryRun {
		r.held = append(r.held, msg)
		it.Disposition = DispositionReserved // updated when handed back
		r.res.add(it)
		return nil
	}
	if it.Outcome != RedriveMoved {
		d, err := r.keep(ctx, msg)
		it.Disposition = d
		if err != nil {
			it.Outcome, it.Err = RedriveFailed, err
		}
		r.res.add(it)
		return err
	}
	d, err := r.move(ctx, msg, env, it.Target)
	it.Disposition = d
	if err != nil {
		if d != DispositionDuplicated {
			it.Outcome = RedriveFailed
		}
		it.Err = err
	}
	r.res.add(it)
	return err
}

// examine decides what to do with msg; Outcome RedriveMoved means move.
func (r *redriver) examine(msg *ReceivedMessage) (RedriveItem, *Envelope) {
	v, present := msg.Header(HeaderSchemaVersion)
	if err := CheckSchemaVersionHeader(v, present); err != nil {
		return RedriveItem{Outcome: RedriveUnsupportedVersion, Err: err}, nil
	}
	env, err := Decode([]byte(msg.Body))
	if err != nil {
		if errors.Is(err, ErrUnsupportedSchemaVersion) {
			return RedriveItem{Outcome: RedriveUnsupportedVersion, Err: err}, nil
		}
		return RedriveItem{Outcome: RedriveUndecodable, Err: err}, nil
	}
	it := RedriveItem{MessageID: env.Meta.ID, URN: env.URN()}
	if env.DeadLetter != nil {
		it.Reason = env.DeadLetter.Reason
	}
	for _, sel := range r.cfg.selectors {
		if !sel(env) {
			it.Outcome = RedriveUnselected
			return it, env
		}
	}
	switch {
	case r.cfg.target != "":
		it.Target = r.cfg.target
	case env.DeadLetter != nil && !IsBlank(env.DeadLetter.OriginalQueue):
		it.Target = env.DeadLetter.OriginalQueue
	case !IsBlank(env.Meta.Queue):
		it.Target = env.Meta.Queue
	}
	switch {
	case IsBlank(it.Target):
		it.Outcome, it.Err = RedriveNoTarget, errors.New("babelqueue: redrive: no target queue")
	case it.Target == r.dlq:
		it.Outcome, it.Err = RedriveNoTarget, fmt.Errorf("babelqueue: redrive: target %s is the dead-letter queue itself", it.Target)
	default:
		it.Outcome = RedriveMoved
	}
	return it, env
}

// move republishes the cleared body to target, then acknowledges msg.
func (r *redriver) move(ctx context.Context, msg *ReceivedMessage, env *Envelope, target string) (RedriveDisposition, error) {
	cleared, err := ClearDeadLetter([]byte(msg.Body))
	if err != nil {
		// Should not happen for a decoded envelope; keep the message.
		d, kerr := r.keep(ctx, msg)
		return d, errors.Join(fmt.Errorf("babelqueue: redrive %s: clearing the dead letter: %w", env.Meta.ID, err), kerr)
	}
	body := string(cleared)
	if err := r.republish(ctx, target, body, msg); err != nil {
		d := r.unsettle(ctx, msg)
		return d, fmt.Errorf("%w: redrive %s to %s: %w", ErrSettle, env.Meta.ID, target, err)
	}
	if err := r.t.Ack(ctx, msg); err != nil {
		r.unsettle(ctx, msg)
		return DispositionDuplicated, fmt.Errorf("%w: redrive %s: republished to %s but the dead letter was not acknowledged and will be read again: %w",
			ErrSettle, env.Meta.ID, target, err)
	}
	return DispositionRemoved, nil
}

func (r *redriver) republish(ctx context.Context, target, body string, from *ReceivedMessage) error {
	if r.cfg.replay {
		h := map[string]string{HeaderReplayBypass: "true"}
		if t, ok := r.t.(HeaderRepublisher); ok {
			return t.PublishFromWithHeaders(ctx, target, body, from, h)
		}
		return r.t.(HeaderPublisher).PublishWithHeaders(ctx, target, body, h)
	}
	if t, ok := r.t.(KeyedRepublisher); ok {
		return t.PublishFrom(ctx, target, body, from)
	}
	if t, ok := r.t.(HeaderRepublisher); ok {
		return t.PublishFromWithHeaders(ctx, target, body, from, nil)
	}
	return r.t.Publish(ctx, target, body)
}

// keep writes msg back to the tail of the DLQ, then acknowledges it.
func (r *redriver) keep(ctx context.Context, msg *ReceivedMessage) (RedriveDisposition, error) {
	if err := r.restore(ctx, msg); err != nil {
		d := r.unsettle(ctx, msg)
		return d, fmt.Errorf("%w: redrive: writing a kept message back to %s: %w", ErrSettle, r.dlq, err)
	}
	r.written[msg.Body] = true
	if err := r.t.Ack(ctx, msg); err != nil {
		r.unsettle(ctx, msg)
		return DispositionDuplicated, fmt.Errorf("%w: redrive: a kept message was written back to %s but its read copy was not acknowledged: %w", ErrSettle, r.dlq, err)
	}
	return DispositionRestored, nil
}

// restore writes msg, unchanged, to the tail of the DLQ.
func (r *redriver) restore(ctx context.Context, msg *ReceivedMessage) error {
	if t, ok := r.t.(Forwarder); ok {
		return t.Forward(ctx, r.dlq, msg.Body, msg, maps.Clone(msg.Headers))
	}
	if t, ok := r.t.(KeyedRepublisher); ok {
		return t.PublishFrom(ctx, r.dlq, msg.Body, msg)
	}
	extra := make(map[string]string)
	for k, v := range msg.Headers {
		if !IsContractHeader(k) {
			extra[k] = v
		}
	}
	if t, ok := r.t.(HeaderRepublisher); ok {
		return t.PublishFromWithHeaders(ctx, r.dlq, msg.Body, msg, extra)
	}
	if t, ok := r.t.(HeaderPublisher); ok && len(extra) > 0 {
		return t.PublishWithHeaders(ctx, r.dlq, msg.Body, extra)
	}
	return r.t.Publish(ctx, r.dlq, msg.Body)
}

// unsettle hands msg back without writing: Rewind, else Nack, else it is
// left reserved.
func (r *redriver) unsettle(ctx context.Context, msg *ReceivedMessage) RedriveDisposition {
	ctx = context.WithoutCancel(ctx)
	switch t := r.t.(type) {
	case Rewinder:
		if t.Rewind(ctx, msg) == nil {
			return DispositionRewound
		}
	case NegativeAcknowledger:
		if t.Nack(ctx, msg) == nil {
			return DispositionNacked
		}
	}
	return DispositionReserved
}

// handBack returns msg to the DLQ untouched when the transport can, else
// writes it back.
func (r *redriver) handBack(ctx context.Context, msg *ReceivedMessage) (RedriveDisposition, error) {
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

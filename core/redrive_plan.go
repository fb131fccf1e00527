package babelqueue

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
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

// HeaderRedriveCount counts how many times a message was redriven. Redrive
// writes it, incremented, on every moved copy; the replay-count guard
// (WithRedriveMaxRedrives) reads it.
const HeaderRedriveCount = "bq-redrive-count"

// HeaderRedriveSource names the dead letter a redriven copy came from (a
// binding-specific position such as "<dlq>/<partition>/<offset>"). A
// binding that can be interrupted between a write and its settlement uses
// it to recognise a copy it already wrote.
const HeaderRedriveSource = "bq-redrive-source"

// RedriveOption configures Redrive.
type RedriveOption func(*RedrivePlan)

// RedrivePlan is a redrive's settings once its options are applied. The
// zero value moves everything to its original queue; NewRedrivePlan fills
// in the defaults.
type RedrivePlan struct {
	// Target, when set, receives every moved message (WithRedriveTarget).
	Target string
	// Max bounds the messages moved; <= 0 means no limit (WithRedriveMax).
	Max int
	// DryRun writes and settles nothing (WithRedriveDryRun).
	DryRun bool
	// ReplayBypass stamps moved copies with bq-replay-bypass=true
	// (WithRedriveReplayBypass).
	ReplayBypass bool
	// MaxRedrives is the replay-count guard; 0 means no guard
	// (WithRedriveMaxRedrives).
	MaxRedrives int
	// PollTimeout is how long a run waits for the next message before it
	// ends (WithRedrivePollTimeout).
	PollTimeout time.Duration
	// Cursor names the durable progress of a binding that keeps one (the
	// Kafka consumer group, the Pulsar subscription); empty means the
	// binding's default (WithRedriveCursor).
	Cursor string
	// Progress, when set, is called once per examined message, after it
	// was settled (WithRedriveProgress).
	Progress func(item RedriveItem)
	// OnTotal, when set, is called once before the first message with the
	// number of messages the run will examine, when the binding knows it
	// (WithRedriveProgress).
	OnTotal func(n int)

	hooks []RedriveHook

	selectors []func(*ReceivedMessage, *Envelope) bool
}

// NewRedrivePlan applies opts over the defaults.
func NewRedrivePlan(opts ...RedriveOption) RedrivePlan {
	p := RedrivePlan{PollTimeout: DefaultRedrivePollTimeout}
	for _, o := range opts {
		if o != nil {
			o(&p)
		}
	}
	if p.PollTimeout <= 0 {
		p.PollTimeout = DefaultRedrivePollTimeout
	}
	return p
}

// WithRedriveTarget sends every redriven message to queue instead of its
// dead_letter.original_queue (or, without one, its meta.queue).
func WithRedriveTarget(queue string) RedriveOption {
	return func(p *RedrivePlan) { p.Target = queue }
}

// WithRedriveMax stops the run once n messages were moved (in a dry run:
// would have been moved). n <= 0 means no limit, the default.
func WithRedriveMax(n int) RedriveOption {
	return func(p *RedrivePlan) { p.Max = n }
}

// WithRedriveDryRun makes the run write and settle nothing: it reports
// what it would move, and every message stays where it is.
func WithRedriveDryRun() RedriveOption {
	return func(p *RedrivePlan) { p.DryRun = true }
}

// WithRedriveSelector moves only the messages for which fn returns true;
// the others stay in the dead-letter queue. fn receives the decoded dead
// letter (env.DeadLetter holds its reason, failed_at, original queue...).
// Several selectors must all return true. SelectURN, SelectReason and
// SelectFailedBetween build common ones.
func WithRedriveSelector(fn func(env *Envelope) bool) RedriveOption {
	return func(p *RedrivePlan) {
		if fn != nil {
			p.selectors = append(p.selectors, func(_ *ReceivedMessage, env *Envelope) bool { return fn(env) })
		}
	}
}

// WithRedriveMessageSelector is WithRedriveSelector for a selector that
// also needs the message as received (its headers, its key).
func WithRedriveMessageSelector(fn func(msg *ReceivedMessage, env *Envelope) bool) RedriveOption {
	return func(p *RedrivePlan) {
		if fn != nil {
			p.selectors = append(p.selectors, fn)
		}
	}
}

// WithRedriveReplayBypass stamps every redriven message with the
// bq-replay-bypass header, so that its handler sees IsReplay(ctx) and
// BypassExternalEffects skips the effects already done. The generic run
// needs a transport with HeaderRepublisher (the key is kept) or
// HeaderPublisher (the key is lost); Redrive fails with ErrInvalidOption
// otherwise.
func WithRedriveReplayBypass() RedriveOption {
	return func(p *RedrivePlan) { p.ReplayBypass = true }
}

// WithRedriveMaxRedrives is the replay-count guard: a dead letter whose
// bq-redrive-count is n or more stays in the dead-letter queue and is
// reported as RedriveGuarded. n <= 0 means no guard, the default.
func WithRedriveMaxRedrives(n int) RedriveOption {
	return func(p *RedrivePlan) { p.MaxRedrives = max(n, 0) }
}

// WithRedrivePollTimeout sets how long Redrive waits for the next dead
// letter before it ends (default DefaultRedrivePollTimeout).
func WithRedrivePollTimeout(d time.Duration) RedriveOption {
	return func(p *RedrivePlan) {
		if d > 0 {
			p.PollTimeout = d
		}
	}
}

// WithRedriveCursor names the durable progress of a binding that keeps
// one (see the binding's Redrive). Runs with the same cursor continue one
// another.
func WithRedriveCursor(name string) RedriveOption {
	return func(p *RedrivePlan) { p.Cursor = name }
}

// WithRedriveProgress reports the run as it goes: onTotal (may be nil)
// once with the number of messages to examine, when the binding knows it,
// and onItem (may be nil) after each examined message was settled.
func WithRedriveProgress(onTotal func(n int), onItem func(item RedriveItem)) RedriveOption {
	return func(p *RedrivePlan) { p.OnTotal, p.Progress = onTotal, onItem }
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

// RedriveCount reads bq-redrive-count from headers: 0 when absent or not
// a non-negative integer.
func RedriveCount(headers map[string]string) int {
	n, err := strconv.Atoi(strings.TrimSpace(headers[HeaderRedriveCount]))
	if err != nil || n < 0 {
		return 0
	}
	return n
}

// Examine decides what a run with this plan does with msg, read from dlq.
// Outcome RedriveMoved means move it to Target, and env is its decoded
// body; any other outcome means it stays, Err saying why where there is a
// reason beyond the plan's choice. Redrives holds msg's bq-redrive-count.
func (p *RedrivePlan) Examine(dlq string, msg *ReceivedMessage) (RedriveItem, *Envelope) {
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
	it := RedriveItem{MessageID: env.Meta.ID, URN: env.URN(), Redrives: RedriveCount(msg.Headers)}
	if env.DeadLetter != nil {
		it.Reason = env.DeadLetter.Reason
	}
	for _, sel := range p.selectors {
		if !sel(msg, env) {
			it.Outcome = RedriveUnselected
			return it, env
		}
	}
	if p.MaxRedrives > 0 && it.Redrives >= p.MaxRedrives {
		it.Outcome = RedriveGuarded
		it.Err = fmt.Errorf("babelqueue: redrive: already redriven %d times (guard: %d)", it.Redrives, p.MaxRedrives)
		return it, env
	}
	switch {
	case p.Target != "":
		it.Target = p.Target
	case env.DeadLetter != nil && !IsBlank(env.DeadLetter.OriginalQueue):
		it.Target = env.DeadLetter.OriginalQueue
	case !IsBlank(env.Meta.Queue):
		it.Target = env.Meta.Queue
	}
	switch {
	case IsBlank(it.Target):
		it.Outcome, it.Err = RedriveNoTarget, errors.New("babelqueue: redrive: no target queue")
	case it.Target == dlq:
		it.Outcome, it.Err = RedriveNoTarget, fmt.Errorf("babelqueue: redrive: target %s is the dead-letter queue itself", it.Target)
	default:
		it.Outcome = RedriveMoved
	}
	return it, env
}

// MovedHeaders returns the out-of-band headers of the moved copy of from:
// from's headers that are not contract (bq-) headers, such as
// traceparent, plus bq-redrive-count (from's, plus one) and, with the
// replay bypass, bq-replay-bypass=true. The binding projects the contract
// headers from the cleared body as for any publish.
func (p *RedrivePlan) MovedHeaders(from *ReceivedMessage) map[string]string {
	h := make(map[string]string, len(from.Headers)+2)
	for k, v := range from.Headers {
		if !IsContractHeader(k) {
			h[k] = v
		}
	}
	h[HeaderRedriveCount] = strconv.Itoa(RedriveCount(from.Headers) + 1)
	if p.ReplayBypass {
		h[HeaderReplayBypass] = "true"
	}
	return h
}

// WithRedriveHooks registers hooks the run reports each examined message
// to (RedriveHook); values that implement no RedriveHook are ignored.
func WithRedriveHooks(hooks ...Hook) RedriveOption {
	return func(p *RedrivePlan) {
		for _, h := range hooks {
			if x, ok := h.(RedriveHook); ok {
				p.hooks = append(p.hooks, x)
			}
		}
	}
}

// reporting returns p with its redrive hooks folded into Progress, so that
// a binding that runs the redrive itself reports to them too.
func (p RedrivePlan) reporting(ctx context.Context, dlq string) RedrivePlan {
	if len(p.hooks) == 0 {
		return p
	}
	hooks, progress := p.hooks, p.Progress
	p.hooks = nil
	p.Progress = func(it RedriveItem) {
		if progress != nil {
			progress(it)
		}
		for _, h := range hooks {
			safely(func() { h.OnRedrive(ctx, dlq, it) })
		}
	}
	return p
}

// Report adds it to res and calls the plan's progress hook: the one way a
// Redriver records an examined message.
func (p *RedrivePlan) Report(res *RedriveResult, it RedriveItem) {
	res.add(it)
	if p.Progress != nil {
		p.Progress(it)
	}
}

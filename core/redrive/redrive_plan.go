package redrive

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/babelqueue/babelqueue-go/core/driver"
	"github.com/babelqueue/babelqueue-go/core/wire"
)

// Run limits.
const (
	// DefaultPollTimeout is how long Run waits for the next
	// dead letter before it decides the queue is done.
	DefaultPollTimeout = time.Second
	// MaxHeld bounds how many messages a dry run holds reserved
	// before it stops (Result.Truncated).
	MaxHeld = 10000
	// MaxItems bounds Result.Items; the counts stay exact.
	MaxItems = 10000
)

// Option configures Run.
type Option func(*Plan)

// Plan is a redrive's settings once its options are applied. The
// zero value moves everything to its original queue; NewPlan fills
// in the defaults.
type Plan struct {
	// Target, when set, receives every moved message (WithTarget).
	Target string
	// Max bounds the messages moved (or discarded); <= 0 means no limit
	// (WithMax).
	Max int
	// Discard makes the run settle the selected dead letters without
	// writing them anywhere (WithDiscard).
	Discard bool
	// Undecodable and UnsupportedVersion select, in a discard run, the dead
	// letters whose body is not an envelope and those the version gate
	// rejects; the selectors never see them (WithUndecodable,
	// WithUnsupportedVersion).
	Undecodable, UnsupportedVersion bool
	// DryRun writes and settles nothing (WithDryRun).
	DryRun bool
	// ReplayBypass stamps moved copies with bq-replay-bypass=true
	// (WithReplayBypass).
	ReplayBypass bool
	// MaxRedrives is the replay-count guard; 0 means no guard
	// (WithMaxRedrives).
	MaxRedrives int
	// PollTimeout is how long a run waits for the next message before it
	// ends (WithPollTimeout).
	PollTimeout time.Duration
	// Cursor names the durable progress of a binding that keeps one (the
	// Kafka consumer group, the Pulsar subscription); empty means the
	// binding's default (WithCursor).
	Cursor string
	// Progress, when set, is called once per examined message, after it
	// was settled (WithProgress).
	Progress func(item Item)
	// OnTotal, when set, is called once before the first message with the
	// number of messages the run will examine, when the binding knows it
	// (WithProgress).
	OnTotal func(n int)

	hooks []hook
	errs  []error // the problems the options found, reported by Run

	selectors []func(*driver.ReceivedMessage, *wire.Envelope) bool
}

// NewPlan applies opts over the defaults.
func NewPlan(opts ...Option) Plan {
	p := Plan{PollTimeout: DefaultPollTimeout}
	for _, o := range opts {
		if o != nil {
			o(&p)
		}
	}
	if p.PollTimeout <= 0 {
		p.PollTimeout = DefaultPollTimeout
	}
	return p
}

// WithTarget sends every redriven message to queue instead of its
// dead_letter.original_queue (or, without one, its meta.queue).
func WithTarget(queue string) Option {
	return func(p *Plan) { p.Target = queue }
}

// WithMax stops the run once n messages were moved or discarded (in a
// dry run: would have been). 0 means no limit, the default; a negative n is
// rejected.
func WithMax(n int) Option {
	return func(p *Plan) {
		if n < 0 {
			p.fail("max %d is negative", n)
			return
		}
		p.Max = n
	}
}

// WithDryRun makes the run write and settle nothing: it reports
// what it would move, and every message stays where it is.
func WithDryRun() Option {
	return func(p *Plan) { p.DryRun = true }
}

// WithDiscard makes the run a discard: each selected dead letter is settled
// in the DLQ and written nowhere. Settled means acknowledged or committed
// past. It is reported as Discarded with its body, key and headers, so that
// the caller can keep a record of it. Target, the replay bypass and the
// replay-count guard do not apply. A dry run reports WouldDiscard.
func WithDiscard() Option {
	return func(p *Plan) { p.Discard = true }
}

// WithUndecodable selects, in a discard run, the dead letters whose body
// is not an envelope (poison), which no selector can see. A run without
// WithDiscard rejects it: such a letter can never be moved.
func WithUndecodable() Option {
	return func(p *Plan) { p.Undecodable = true }
}

// WithUnsupportedVersion selects, in a discard run, the dead letters the
// version gate rejects (bq-schema-version header or meta.schema_version
// not 1). A run without WithDiscard rejects it.
func WithUnsupportedVersion() Option {
	return func(p *Plan) { p.UnsupportedVersion = true }
}

// SelectNone returns a selector that declines every decodable dead
// letter: a discard run of only WithUndecodable or WithUnsupportedVersion
// letters adds it.
func SelectNone() func(*wire.Envelope) bool {
	return func(*wire.Envelope) bool { return false }
}

// WithSelector moves only the messages for which fn returns true;
// the others stay in the dead-letter queue. fn receives the decoded dead
// letter (env.DeadLetter holds its reason, failed_at, original queue...).
// Several selectors must all return true. SelectURN, SelectReason and
// SelectFailedBetween build common ones.
func WithSelector(fn func(env *wire.Envelope) bool) Option {
	return func(p *Plan) {
		if fn != nil {
			p.selectors = append(p.selectors, func(_ *driver.ReceivedMessage, env *wire.Envelope) bool { return fn(env) })
		}
	}
}

// WithMessageSelector is WithSelector for a selector that
// also needs the message as received (its headers, its key).
func WithMessageSelector(fn func(msg *driver.ReceivedMessage, env *wire.Envelope) bool) Option {
	return func(p *Plan) {
		if fn != nil {
			p.selectors = append(p.selectors, fn)
		}
	}
}

// WithReplayBypass stamps every redriven message with the
// bq-replay-bypass header, so that its handler sees IsReplay(ctx) and
// BypassExternalEffects skips the effects already done. The generic run
// needs a transport with HeaderRepublisher (the key is kept) or
// HeaderPublisher (the key is lost); Run fails with driver.ErrInvalidOption
// otherwise.
func WithReplayBypass() Option {
	return func(p *Plan) { p.ReplayBypass = true }
}

// WithMaxRedrives is the replay-count guard: a dead letter whose
// bq-redrive-count is n or more stays in the dead-letter queue and is
// reported as Guarded. 0 means no guard, the default; a negative n is
// rejected.
func WithMaxRedrives(n int) Option {
	return func(p *Plan) {
		if n < 0 {
			p.fail("max redrives %d is negative", n)
			return
		}
		p.MaxRedrives = n
	}
}

// WithPollTimeout sets how long Run waits for the next dead
// letter before it ends (default DefaultPollTimeout); it must be positive.
func WithPollTimeout(d time.Duration) Option {
	return func(p *Plan) {
		if d <= 0 {
			p.fail("poll timeout %v is not positive", d)
			return
		}
		p.PollTimeout = d
	}
}

// WithCursor names the durable progress of a binding that keeps
// one (see the binding's Run). Runs with the same cursor continue one
// another.
func WithCursor(name string) Option {
	return func(p *Plan) { p.Cursor = name }
}

// WithProgress reports the run as it goes, through onTotal and onItem;
// either may be nil. onTotal is called once with the number of messages to
// examine, when the binding knows it, and onItem after each examined
// message was settled.
func WithProgress(onTotal func(n int), onItem func(item Item)) Option {
	return func(p *Plan) { p.OnTotal, p.Progress = onTotal, onItem }
}

// SelectURN returns a selector of the messages whose URN is one of urns.
func SelectURN(urns ...string) func(*wire.Envelope) bool {
	return func(env *wire.Envelope) bool { return slices.Contains(urns, env.URN()) }
}

// SelectReason returns a selector of the dead letters whose
// dead_letter.reason is one of reasons (wire.ReasonFailed, wire.ReasonUnknownURN...).
// A message without a dead_letter block is not selected.
func SelectReason(reasons ...string) func(*wire.Envelope) bool {
	return func(env *wire.Envelope) bool {
		return env.DeadLetter != nil && slices.Contains(reasons, env.DeadLetter.Reason)
	}
}

// SelectFailedBetween returns a selector of the dead letters whose
// dead_letter.failed_at is in [from, to). A zero from or to leaves that
// side open. A message without a dead_letter block is not selected.
func SelectFailedBetween(from, to time.Time) func(*wire.Envelope) bool {
	return func(env *wire.Envelope) bool {
		if env.DeadLetter == nil {
			return false
		}
		at := time.UnixMilli(env.DeadLetter.FailedAt)
		return (from.IsZero() || !at.Before(from)) && (to.IsZero() || at.Before(to))
	}
}

// Count reads bq-redrive-count from headers: 0 when absent or not
// a non-negative integer.
func Count(headers map[string]string) int {
	n, err := strconv.Atoi(strings.TrimSpace(headers[wire.HeaderRedriveCount]))
	if err != nil || n < 0 {
		return 0
	}
	return n
}

// Examine decides what a run with this plan does with msg, read from dlq.
// Outcome Moved means move it to Target, and env is its decoded
// body; any other outcome means it stays, Err saying why where there is a
// reason beyond the plan's choice. Redrives holds msg's bq-redrive-count.
func (p *Plan) Examine(dlq string, msg *driver.ReceivedMessage) (Item, *wire.Envelope) {
	v, present := msg.Header(wire.HeaderSchemaVersion)
	if err := wire.CheckSchemaVersionHeader(v, present); err != nil {
		return p.unreadable(msg, UnsupportedVersion, p.UnsupportedVersion, err), nil
	}
	env, err := wire.Decode([]byte(msg.Body))
	if err != nil {
		if errors.Is(err, wire.ErrUnsupportedSchemaVersion) {
			return p.unreadable(msg, UnsupportedVersion, p.UnsupportedVersion, err), nil
		}
		return p.unreadable(msg, Undecodable, p.Undecodable, err), nil
	}
	it := Item{MessageID: env.Meta.ID, URN: env.URN(), Redrives: Count(msg.Headers)}
	if env.DeadLetter != nil {
		it.Reason = env.DeadLetter.Reason
	}
	for _, sel := range p.selectors {
		if !sel(msg, env) {
			it.Outcome = Unselected
			return it, env
		}
	}
	if p.Discard {
		return discarded(it, msg), env
	}
	if p.MaxRedrives > 0 && it.Redrives >= p.MaxRedrives {
		it.Outcome = Guarded
		it.Err = fmt.Errorf("babelqueue: redrive: already redriven %d times (guard: %d)", it.Redrives, p.MaxRedrives)
		return it, env
	}
	switch {
	case p.Target != "":
		it.Target = p.Target
	case env.DeadLetter != nil && !wire.IsBlank(env.DeadLetter.OriginalQueue):
		it.Target = env.DeadLetter.OriginalQueue
	case !wire.IsBlank(env.Meta.Queue):
		it.Target = env.Meta.Queue
	}
	switch {
	case wire.IsBlank(it.Target):
		it.Outcome, it.Err = NoTarget, errors.New("babelqueue: redrive: no target queue")
	case it.Target == dlq:
		it.Outcome, it.Err = NoTarget, fmt.Errorf("babelqueue: redrive: target %s is the dead-letter queue itself", it.Target)
	default:
		it.Outcome = Moved
	}
	return it, env
}

// unreadable is the item of a dead letter that could not be read as an
// envelope: it stays as outcome, or is discarded when the discard run
// selects that kind.
func (p *Plan) unreadable(msg *driver.ReceivedMessage, outcome Outcome, selected bool, err error) Item {
	it := Item{Outcome: outcome, Err: err, Redrives: Count(msg.Headers)}
	if p.Discard && selected {
		it = discarded(it, msg)
	}
	return it
}

// discarded marks it Discarded, with msg's body, key and headers.
func discarded(it Item, msg *driver.ReceivedMessage) Item {
	it.Outcome = Discarded
	it.Body, it.Key, it.Headers = msg.Body, msg.Key, maps.Clone(msg.Headers)
	return it
}

// MovedHeaders returns the out-of-band headers of the moved copy of from,
// with bq-redrive-count one above from's. These are from's headers that are
// not contract (bq-) headers, such as traceparent, plus bq-redrive-count
// and, with the replay bypass, bq-replay-bypass=true. The binding projects
// the contract headers from the cleared body as for any publish.
func (p *Plan) MovedHeaders(from *driver.ReceivedMessage) map[string]string {
	h := make(map[string]string, len(from.Headers)+2)
	for k, v := range from.Headers {
		if !wire.IsContractHeader(k) {
			h[k] = v
		}
	}
	h[wire.HeaderRedriveCount] = strconv.Itoa(Count(from.Headers) + 1)
	if p.ReplayBypass {
		h[wire.HeaderReplayBypass] = "true"
	}
	return h
}

// WithHooks registers hooks the run reports each examined message
// to (babelqueue.RedriveHook: OnRedrive); other values are ignored.
func WithHooks(hooks ...any) Option {
	return func(p *Plan) {
		for _, h := range hooks {
			if x, ok := h.(hook); ok {
				p.hooks = append(p.hooks, x)
			}
		}
	}
}

// reporting returns p with its redrive hooks folded into Progress, so that
// a binding that runs the redrive itself reports to them too.
func (p Plan) reporting(ctx context.Context, dlq string) Plan {
	if len(p.hooks) == 0 {
		return p
	}
	hooks, progress := p.hooks, p.Progress
	p.hooks = nil
	p.Progress = func(it Item) {
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
func (p *Plan) Report(res *Result, it Item) {
	res.add(it)
	if p.Progress != nil {
		p.Progress(it)
	}
}

// hook is babelqueue.RedriveHook, the one hook a run reports to.
type hook interface {
	OnRedrive(ctx context.Context, dlq string, item Item)
}

// safely runs fn, recovering a panic: a hook never stops a run.
func safely(fn func()) {
	defer func() { _ = recover() }()
	fn()
}

// invalid returns an error wrapping driver.ErrInvalidOption.
func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{driver.ErrInvalidOption}, args...)...)
}

// fail records a problem of an option; Run and RunPlan report it.
func (p *Plan) fail(format string, args ...any) {
	p.errs = append(p.errs, invalid("redrive: "+format, args...))
}

// check returns every problem of a run of plan on t and dlq, joined.
func (p *Plan) check(t driver.Transport, dlq string) error {
	errs := slices.Clone(p.errs)
	if t == nil {
		errs = append(errs, invalid("redrive: transport is nil"))
	}
	if wire.IsBlank(dlq) {
		errs = append(errs, invalid("redrive: dead-letter queue is blank"))
	}
	if (p.Undecodable || p.UnsupportedVersion) && !p.Discard {
		errs = append(errs, invalid("redrive: selecting undecodable or version-gated dead letters needs a discard run (WithDiscard): they can never be moved"))
	}
	if t != nil && p.ReplayBypass && !p.Discard && !t.Features().Headers {
		errs = append(errs, invalid("redrive: replay bypass needs a transport that publishes headers, %T does not", t))
	}
	return errors.Join(errs...)
}

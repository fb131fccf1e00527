package main

import (
	"context"
	"errors"
	"fmt"
	"github.com/spf13/cobra"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	"github.com/schollz/progressbar/v3"

	babelqueue "github.com/babelqueue/babelqueue-go/core"
	"github.com/babelqueue/babelqueue-go/core/redrive"
	"github.com/babelqueue/babelqueue-go/core/wire"
	bqkafka "github.com/babelqueue/babelqueue-go/kafka"
	bqpulsar "github.com/babelqueue/babelqueue-go/pulsar"
)

// Headers a redrive writes on a moved copy (see babelqueue).
const (
	headerRedriveCount  = wire.HeaderRedriveCount
	headerRedriveSource = wire.HeaderRedriveSource
)

// Outcomes of one examined dead letter, as the summary counts them: the
// redrive.Outcome values (a dry run's would_move is counted apart from
// moved).
const (
	outcomeMoved       = string(redrive.Moved)
	outcomeWouldMove   = string(redrive.WouldMove)
	outcomeRecovered   = string(redrive.AlreadyMoved)
	outcomeKeptBefore  = string(redrive.AlreadyKept)
	outcomeUnselected  = string(redrive.Unselected)
	outcomeUndecodable = string(redrive.Undecodable)
	outcomeVersion     = string(redrive.UnsupportedVersion)
	outcomeNoTarget    = string(redrive.NoTarget)
	outcomeGuarded     = string(redrive.Guarded)
	outcomeFailed      = string(redrive.Failed)

	outcomeDiscarded = string(redrive.Discarded)
	outcomeWouldDrop = string(redrive.WouldDiscard)
)

// redriveOptions are the validated flags of a redrive run.
type redriveOptions struct {
	selector    selector
	target      string
	max         int
	maxRedrives int
	dryRun      bool
	bypass      bool

	// discard makes the run a discard (redrive.WithDiscard); undecodable
	// and unsupported select the dead letters no selector can see.
	discard, undecodable, unsupported bool
	// cursor is the durable progress (Kafka group, Pulsar subscription);
	// empty means the binding's default.
	cursor string
	// onTotal and onItem, when set, follow the run (the progress bar).
	onTotal func(n int)
	onItem  func()
	// onEach, when set, sees every examined dead letter, with the item as
	// the run reported it (dlq discard writes its record file from it).
	onEach func(redriveItem, redrive.Item)
}

// redriveItem is one examined dead letter. Partition and Offset are set
// for a Kafka position ("<partition>/<offset>").
type redriveItem struct {
	Position    string `json:"position,omitempty"`
	Partition   *int   `json:"partition,omitempty"`
	Offset      *int64 `json:"offset,omitempty"`
	ID          string `json:"id,omitempty"`
	URN         string `json:"urn,omitempty"`
	Reason      string `json:"reason,omitempty"`
	Target      string `json:"target,omitempty"`
	Count       int    `json:"redrive_count"`
	Outcome     string `json:"outcome"`
	Disposition string `json:"disposition,omitempty"`
	Note        string `json:"note,omitempty"`
}

func viewRedriveItem(it redrive.Item) redriveItem {
	v := redriveItem{Position: it.Position, ID: it.MessageID, URN: it.URN, Reason: it.Reason, Target: it.Target,
		Count: it.Redrives, Outcome: string(it.Outcome), Disposition: string(it.Disposition)}
	if it.Err != nil {
		v.Note = it.Err.Error()
	}
	if ps, offs, ok := strings.Cut(it.Position, "/"); ok {
		p, perr := strconv.Atoi(ps)
		o, oerr := strconv.ParseInt(offs, 10, 64)
		if perr == nil && oerr == nil {
			v.Partition, v.Offset = &p, &o
		}
	}
	return v
}

// redriveReport sums up a run from its redrive.Result. Outcomes
// and Targets count every examined dead letter; Guarded lists those the
// replay-count guard held back and Items the examined ones, each at most
// maxReportedItems: the rows beyond it are counted in GuardedLeftOut and
// ItemsLeftOut, never dropped silently. In a dry run the outcome of a
// dead letter that would move is "would_move".
type redriveReport struct {
	DLQ      string `json:"dlq"`
	Cursor   string `json:"cursor,omitempty"`
	DryRun   bool   `json:"dry_run"`
	Resumed  bool   `json:"resumed"`
	Pending  int    `json:"pending"`
	Examined int    `json:"examined"`
	Moved    int    `json:"moved"`
	// WouldMove is what a dry run would have moved (Moved stays 0).
	WouldMove int            `json:"would_move"`
	Recovered int            `json:"recovered"`
	Kept      int            `json:"kept"`
	Outcomes  map[string]int `json:"outcomes"`
	Targets   map[string]int `json:"targets"`
	Guarded   []redriveItem  `json:"guarded"`
	Items     []redriveItem  `json:"items"`
	// GuardedLeftOut and ItemsLeftOut count the rows beyond
	// maxReportedItems (memory stays bounded on a huge DLQ).
	GuardedLeftOut int `json:"guarded_left_out"`
	ItemsLeftOut   int `json:"items_left_out"`
	// Truncated: a dry run stopped after babelqueue.MaxRedriveHeld
	// messages; the rest was not examined.
	Truncated   bool   `json:"truncated"`
	Interrupted bool   `json:"interrupted"`
	Failed      string `json:"error,omitempty"`
	// verb is "moved" ("discarded" for dlq discard), for the text report.
	verb string

	// Discarded and WouldDiscard count the dead letters a discard run
	// discarded, or would have in a dry run.
	Discarded    int `json:"discarded"`
	WouldDiscard int `json:"would_discard"`
}

// maxReportedItems bounds the item lists kept in memory; the text report
// prints at most maxPrintedRows guarded rows.
const (
	maxReportedItems = 100_000
	maxPrintedRows   = 50
)

func newRedriveReport(dlq, cursor string, dry bool) *redriveReport {
	return &redriveReport{DLQ: dlq, Cursor: cursor, DryRun: dry, Pending: -1, Outcomes: map[string]int{}, Targets: map[string]int{},
		Guarded: []redriveItem{}, Items: []redriveItem{}, verb: "moved"}
}

// add counts one examined dead letter.
func (r *redriveReport) add(it redriveItem) {
	r.Outcomes[it.Outcome]++
	if it.Outcome == outcomeMoved || it.Outcome == outcomeWouldMove {
		r.Targets[it.Target]++
	}
	if it.Outcome == outcomeGuarded {
		if len(r.Guarded) < maxReportedItems {
			r.Guarded = append(r.Guarded, it)
		} else {
			r.GuardedLeftOut++
		}
	}
	if len(r.Items) < maxReportedItems {
		r.Items = append(r.Items, it)
	} else {
		r.ItemsLeftOut++
	}
}

// finish takes the totals of the run's result.
func (r *redriveReport) finish(res *redrive.Result) {
	if res == nil {
		return
	}
	r.Resumed, r.Truncated = res.Resumed, res.Truncated
	r.Examined, r.Moved, r.Recovered, r.Kept = res.Examined, res.Moved, res.Recovered, res.Kept
	r.Discarded = res.Discarded
	if r.DryRun {
		r.WouldMove, r.Moved = res.Moved, 0
		r.WouldDiscard, r.Discarded = res.Discarded, 0
	}
}

// write prints the summary table (and the guarded records).
func (r *redriveReport) write(w io.Writer) error {
	mode := ""
	if r.DryRun {
		mode = " (dry run: nothing written or committed)"
	}
	fmt.Fprintf(w, "redrive of %s%s\n", r.DLQ, mode)
	if r.Cursor != "" {
		fmt.Fprintf(w, "cursor: %s (resumed: %t)\n", r.Cursor, r.Resumed)
	}
	moved := r.verb
	count := r.Outcomes[outcomeMoved]
	switch {
	case r.DryRun && r.verb == "discarded":
		moved, count = "would discard", r.Outcomes[outcomeWouldDrop]
	case r.DryRun:
		moved, count = "would move", r.Outcomes[outcomeWouldMove]
	case r.verb == "discarded":
		count = r.Outcomes[outcomeDiscarded]
	}
	rows := [][]string{
		{"examined", strconv.Itoa(r.Examined)},
		{moved, strconv.Itoa(count)},
		{"already moved by an interrupted run", strconv.Itoa(r.Outcomes[outcomeRecovered])},
		{"already kept by an interrupted run (stay)", strconv.Itoa(r.Outcomes[outcomeKeptBefore])},
		{"not selected (stay)", strconv.Itoa(r.Outcomes[outcomeUnselected])},
		{"undecodable (stay)", strconv.Itoa(r.Outcomes[outcomeUndecodable])},
		{"unsupported schema version (stay)", strconv.Itoa(r.Outcomes[outcomeVersion])},
		{"no target queue (stay)", strconv.Itoa(r.Outcomes[outcomeNoTarget])},
		{"held by the replay-count guard (stay)", strconv.Itoa(r.Outcomes[outcomeGuarded])},
	}
	if n := r.Outcomes[outcomeFailed]; n > 0 {
		rows = append(rows, []string{"failed (stay, run stopped)", strconv.Itoa(n)})
	}
	fmt.Fprintln(w)
	if err := writeTable(w, []string{"OUTCOME", "COUNT"}, rows); err != nil {
		return err
	}
	if len(r.Targets) > 0 {
		fmt.Fprintln(w)
		var trows [][]string
		for _, c := range sortedCounts(r.Targets) {
			trows = append(trows, []string{c.Key, strconv.Itoa(c.Count)})
		}
		if err := writeTable(w, []string{"TARGET", strings.ToUpper(moved)}, trows); err != nil {
			return err
		}
	}
	if len(r.Guarded) > 0 {
		fmt.Fprintln(w)
		var grows [][]string
		for _, g := range r.Guarded[:min(len(r.Guarded), maxPrintedRows)] {
			grows = append(grows, []string{g.Position, g.ID, g.URN, strconv.Itoa(g.Count)})
		}
		if err := writeTable(w, []string{"POSITION", "ID", "URN", "REDRIVES"}, grows); err != nil {
			return err
		}
		if left := len(r.Guarded) - len(grows) + r.GuardedLeftOut; left > 0 {
			fmt.Fprintf(w, "... and %d more held by the guard (--json lists them all)\n", left)
		}
	}
	if r.ItemsLeftOut > 0 || r.GuardedLeftOut > 0 {
		fmt.Fprintf(w, "\nnote: %s and %s are counted above but not listed (the lists keep %d rows)\n", nOf(r.ItemsLeftOut, "examined record", ""), nOf(r.GuardedLeftOut, "guarded one", ""), maxReportedItems)
	}
	if r.Truncated {
		fmt.Fprintf(w, "\nnote: the dry run stopped after %s (babelqueue.MaxRedriveHeld); the rest of the DLQ was not examined\n", nOf(r.Examined, "record", ""))
	}
	switch {
	case r.Interrupted:
		fmt.Fprintf(w, "\ninterrupted: everything counted above is settled; run the same command again to resume from the cursor\n")
	case r.Failed != "":
		// The command reports the error itself, once, on stderr.
		fmt.Fprintf(w, "\nstopped by an error (see below)\n")
	}
	return nil
}

const redriveHelp = `Moves dead letters back to work: each selected dead letter is
republished to --target, else its dead_letter.original_queue, else its
meta.queue, with the dead_letter block removed and attempts reset to 0
(every other byte unchanged), the key kept byte for byte, its out-of-band
headers (traceparent...) kept, bq-redrive-count incremented and, with
--replay-bypass, bq-replay-bypass=true (handlers see IsReplay(ctx)).

Kafka (records are never deleted from a topic): progress is a cursor, the
offsets of a consumer group on the DLQ (--group; by default
bq-redrive.<dlq>, one per DLQ whatever the selection). Each partition is
read from the cursor up to the high-water mark seen at the start. A dead
letter that is moved goes to the key's partition (murmur2, as the Java
client); one that stays (not selected, undecodable, unsupported version,
no target, held by the guard) is written back unchanged to the tail of the
DLQ, so the next run examines it again. Before each write bq commits, as
cursor metadata, where the copy will land; after the broker acknowledged
the write (acks=all) the cursor passes the record. If the process dies in
between, the next run finds the copy by its bq-redrive-source header and
does not write it again. So a run may be killed at any point and run
again: nothing is lost, nothing is redriven twice, and a later run with a
different selection never moves a record an earlier run already moved.
The DLQ's live content starts at the cursor: records before it were moved
or copied to the tail (another group, or a new --group, sees the old
copies too). A dry run writes and commits nothing. One run at a time: a
run joins the consumer group <cursor>.lock for its whole duration and
fails at once, before reading anything, when another run is a member; a
killed run holds it for 6 s after its last heartbeat. A dry run does not
take it. Taking it adds the broker's group.initial.rebalance.delay.ms
(3 s by default) to the start of a run.

Pulsar: the DLQ is consumed on an Exclusive subscription (--subscription,
default bq-redrive); a second run on the same DLQ fails at once. Messages
that stay are left unacknowledged, in place and in order, for the next
run. Moves are settled in batches of up to 100: bq first appends a record
to the topic <dlq>.<subscription>.journal (the batch's dead letters and
where each target ended), then writes the copies (each with
bq-redrive-source), then acknowledges the dead letters. If the process
dies in between, the next run finds the copies already written and
acknowledges their dead letters without writing them again. Until a run
ends cleanly, a subscription <subscription>.guard on each target keeps the
copies (and what is written there since): run an interrupted redrive
again soon. bq needs to produce and consume the journal topic and to
subscribe on the targets. Pulsar transactions are not used:
pulsar-client-go v0.19.0 leaves aborted transactional messages visible
(apache/pulsar-client-go#1498).

The replay-count guard (--max-redrives, default 3) leaves a dead letter
that was already redriven that many times in the DLQ and reports it
(exit code 3). On a terminal, a progress bar shows long runs; a summary
table (or --json, with each examined record's position) ends every run.

` + connEnvHelp

const redriveExamples = `  # what would move, without writing anything
  bq redrive --broker kafka://127.0.0.1:9092 --topic orders --dry-run
  # move failed orders of the last day back, handlers skip side effects
  bq redrive --broker kafka://127.0.0.1:9092 --topic orders --reason failed \
      --since 24h --replay-bypass
  # at most 100 to a quarantine queue, JSON summary
  bq redrive --broker kafka://127.0.0.1:9092 --dlq orders.dlq --target orders.slow --max 100 --json
  bq redrive --broker pulsar://127.0.0.1:6650 --topic orders --urn urn:bq:orders:created`

func newRedriveCmd() *cobra.Command {
	cmd := leaf("redrive", "move dead letters back to their queue (resumable)", redriveHelp, redriveExamples)
	fs := cmd.Flags()
	var cf dlqFlags
	cf.register(fs)
	var sel selectorFlags
	sel.register(fs)
	target := fs.String("target", "", "queue to move dead letters to (default: each one's original queue)")
	maxN := fs.Int("max", 0, "move at most this many (0: no limit)")
	maxRedrives := fs.Int("max-redrives", 3, "replay-count guard: leave a dead letter already redriven this many times (0: no guard)")
	dry := fs.Bool("dry-run", false, "report what would move; write and commit nothing")
	bypass := fs.Bool("replay-bypass", false, "mark redriven messages with bq-replay-bypass=true")
	group := fs.String("group", "", "Kafka consumer group holding the cursor (default bq-redrive.<dlq>)")
	sub := fs.String("subscription", "bq-redrive", "Pulsar subscription on the DLQ")
	noProgress := fs.Bool("no-progress", false, "never show the progress bar")
	asJSON := fs.Bool("json", false, "print the summary as JSON")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		ctx, out, errOut := cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr()
		topic, err := cf.topic()
		if err != nil {
			return err
		}
		if *maxN < 0 || *maxRedrives < 0 {
			return usagef("--max and --max-redrives must be >= 0")
		}
		selector, err := sel.build()
		if err != nil {
			return usagef("%v", err)
		}
		u, err := cf.resolve(errOut)
		if err != nil {
			return err
		}
		opts := redriveOptions{selector: selector, target: *target, max: *maxN, maxRedrives: *maxRedrives, dryRun: *dry, bypass: *bypass}

		t, cursor, closeT, err := openRedrive(ctx, &cf.connFlags, u, topic, *group, *sub)
		if err != nil {
			return err
		}
		defer closeT()
		opts.cursor = *group
		if u.Kind == kindPulsar {
			opts.cursor = *sub
		}

		var bar *progressbar.ProgressBar
		if !*noProgress && !*asJSON && isTerminal(out) {
			opts.onTotal = func(n int) {
				bar = progressbar.NewOptions(n, progressbar.OptionSetWriter(os.Stderr), progressbar.OptionSetDescription("redrive "+topic),
					progressbar.OptionShowCount(), progressbar.OptionThrottle(100*time.Millisecond), progressbar.OptionClearOnFinish())
			}
			opts.onItem = func() {
				if bar != nil {
					_ = bar.Add(1)
				}
			}
		}
		report, runErr := redriveWith(ctx, t, topic, cursor, opts)
		if runErr != nil && ctx.Err() != nil {
			report.Interrupted, report.Failed = true, ""
		}
		if bar != nil {
			_ = bar.Finish()
		}
		if runErr != nil && !report.Interrupted && report.Examined == 0 && !*asJSON {
			return runErr // nothing examined: the error alone, no table of zeros
		}
		if *asJSON {
			if err := writeJSON(out, report); err != nil {
				return err
			}
		} else if err := report.write(out); err != nil {
			return err
		}
		if errors.Is(runErr, bqkafka.ErrRedriveBusy) || errors.Is(runErr, bqpulsar.ErrRedriveBusy) {
			// The wrapped error says how long a killed run keeps the cursor.
			return fmt.Errorf("bq redrive: another redrive is running on cursor %q (one run at a time), nothing was redriven: %w", cursor, runErr)
		}
		if report.Interrupted {
			fmt.Fprintf(errOut, "bq redrive: interrupted; the run is resumable: run the same command again (cursor %q)\n", cursor)
			return errInterrupted
		}
		if runErr != nil {
			return runErr
		}
		if report.Outcomes[outcomeGuarded] > 0 {
			return errPartial
		}
		return nil
	}
	return cmd
}

// redriveWith runs redrive.Run of dlq over t with the options and
// sums it up. cursor names the durable progress in the report.
func redriveWith(ctx context.Context, t babelqueue.Transport, dlq, cursor string, o redriveOptions) (*redriveReport, error) {
	report := newRedriveReport(dlq, cursor, o.dryRun)
	ropts := []redrive.Option{
		redrive.WithSelector(o.selector.matchEnvelope),
		redrive.WithMaxRedrives(o.maxRedrives),
		redrive.WithPollTimeout(2 * time.Second),
		redrive.WithProgress(func(n int) {
			report.Pending = n
			if o.onTotal != nil {
				o.onTotal(n)
			}
		}, func(it redrive.Item) {
			v := viewRedriveItem(it)
			report.add(v)
			if o.onEach != nil {
				o.onEach(v, it)
			}
			if o.onItem != nil {
				o.onItem()
			}
		}),
	}
	if o.cursor != "" {
		ropts = append(ropts, redrive.WithCursor(o.cursor))
	}
	if o.target != "" {
		ropts = append(ropts, redrive.WithTarget(o.target))
	}
	if o.max > 0 {
		ropts = append(ropts, redrive.WithMax(o.max))
	}
	if o.dryRun {
		ropts = append(ropts, redrive.WithDryRun())
	}
	if o.bypass {
		ropts = append(ropts, redrive.WithReplayBypass())
	}
	if o.discard {
		ropts = append(ropts, redrive.WithDiscard())
	}
	if o.undecodable {
		ropts = append(ropts, redrive.WithUndecodable())
	}
	if o.unsupported {
		ropts = append(ropts, redrive.WithUnsupportedVersion())
	}
	res, err := redrive.Run(ctx, t, dlq, ropts...)
	report.finish(res)
	if err != nil {
		report.Failed = err.Error()
	}
	return report, err
}

// openRedrive opens the transport a redrive (or a discard) of dlq runs
// on and names its cursor: the Kafka consumer group (group, else
// bq-redrive.<dlq>) or the Pulsar subscription.
func openRedrive(ctx context.Context, cf *connFlags, u brokerURL, dlq, group, sub string) (babelqueue.Transport, string, func(), error) {
	if u.Kind == kindKafka {
		k, err := cf.kafka(ctx, u) // fails fast and clearly on an unreachable broker
		if err != nil {
			return nil, "", nil, err
		}
		_, err = k.partitions(ctx, dlq)
		k.close()
		if errors.As(err, new(noTopicError)) {
			return nil, "", nil, fmt.Errorf("%w: no dead letter was ever written there, or the name is wrong (bq topics list --prefix ...)", err)
		}
		if err != nil {
			return nil, "", nil, err
		}
		kt, err := bqkafka.New(k.transportOptions()...)
		if err != nil {
			return nil, "", nil, err
		}
		cursor := group
		if cursor == "" {
			cursor = bqkafka.RedriveCursor(dlq)
		}
		return kt, cursor, func() { kt.Close() }, nil
	}
	pt, closeT, err := openPulsarForRedrive(ctx, cf, u, dlq, sub)
	if err != nil {
		return nil, "", nil, err
	}
	return pt, sub, closeT, nil
}

// openPulsarForRedrive builds a Pulsar transport consuming the DLQ on a
// shared subscription from the earliest message.
//
// A Pulsar broker creates a topic when a consumer subscribes to it, so a
// mistyped queue would get an empty DLQ and a summary of zeros: the admin
// API is asked first whether the DLQ exists, and a DLQ it does not know is
// an error. When the admin API cannot be asked (another URL, no access, no
// answer within the dial timeout), the run goes on.
func openPulsarForRedrive(ctx context.Context, cf *connFlags, u brokerURL, dlq, sub string) (babelqueue.Transport, func(), error) {
	p, err := cf.pulsar(ctx, u)
	if err != nil {
		return nil, nil, err
	}
	if err := cf.pulsarTopicMissing(ctx, u, dlq); err != nil {
		p.client.Close()
		return nil, nil, fmt.Errorf("%w: no dead letter was ever written there, or the name is wrong (bq topics list)", err)
	}
	t, err := p.transport(bqpulsar.WithSubscription(sub), bqpulsar.WithSubscriptionType(pulsar.Shared),
		bqpulsar.WithInitialPosition(pulsar.SubscriptionPositionEarliest))
	if err != nil {
		p.client.Close()
		return nil, nil, err
	}
	return t, func() { t.Close(); p.client.Close() }, nil
}

// pulsarTopicMissing returns a noTopicError when the Pulsar admin API says
// topic does not exist; nil when it exists or the API cannot tell within
// the dial timeout.
func (c *connFlags) pulsarTopicMissing(ctx context.Context, u brokerURL, topic string) error {
	a, err := c.pulsarAdmin(u, "")
	if err != nil {
		return nil
	}
	actx, cancel := context.WithTimeout(ctx, c.dialTimeout)
	defer cancel()
	if _, _, err := a.stats(actx, topic); errors.Is(err, errNotFound) {
		return noTopicError{topic}
	}
	return nil
}

package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"strconv"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	babelqueue "github.com/babelqueue/babelqueue-go/core"
	bqpulsar "github.com/babelqueue/babelqueue-go/pulsar"
	"github.com/schollz/progressbar/v3"
)

// Outcomes of one examined dead letter.
const (
	outcomeMoved       = "moved"
	outcomeRecovered   = "already_moved"
	outcomeUnselected  = "unselected"
	outcomeUndecodable = "undecodable"
	outcomeNoTarget    = "no_target"
	outcomeGuarded     = "guarded"
)

// redriveOptions are the validated flags of a redrive run.
type redriveOptions struct {
	selector    selector
	target      string
	max         int
	maxRedrives int
	dryRun      bool
	bypass      bool
	onTotal     func(n int)
}

// redriveItem is one examined dead letter.
type redriveItem struct {
	Partition int    `json:"partition"`
	Offset    int64  `json:"offset"`
	ID        string `json:"id,omitempty"`
	URN       string `json:"urn,omitempty"`
	Reason    string `json:"reason,omitempty"`
	Target    string `json:"target,omitempty"`
	Count     int    `json:"redrive_count,omitempty"`
	Outcome   string `json:"outcome"`
	Note      string `json:"note,omitempty"`
}

// redriveReport sums up a run; Guarded lists the records the replay-count
// guard held back.
type redriveReport struct {
	DLQ      string         `json:"dlq"`
	Group    string         `json:"group,omitempty"`
	DryRun   bool           `json:"dry_run"`
	Resumed  bool           `json:"resumed"`
	Pending  int            `json:"pending"`
	Examined int            `json:"examined"`
	Moved    int            `json:"moved"`
	Outcomes map[string]int `json:"outcomes"`
	Targets  map[string]int `json:"targets"`
	Guarded  []redriveItem  `json:"guarded"`
	Failed   string         `json:"error,omitempty"`
}

func newRedriveReport(dlq, group string, dry bool) *redriveReport {
	return &redriveReport{DLQ: dlq, Group: group, DryRun: dry, Outcomes: map[string]int{}, Targets: map[string]int{}, Guarded: []redriveItem{}}
}

// maxReportedGuarded bounds the guarded list kept in memory.
const maxReportedGuarded = 1000

func (r *redriveReport) add(it redriveItem) {
	r.Examined++
	r.Outcomes[it.Outcome]++
	if it.Outcome == outcomeMoved {
		r.Moved++
		r.Targets[it.Target]++
	}
	if it.Outcome == outcomeGuarded && len(r.Guarded) < maxReportedGuarded {
		r.Guarded = append(r.Guarded, it)
	}
}

// write prints the summary table (and the guarded records).
func (r *redriveReport) write(w io.Writer) error {
	mode := ""
	if r.DryRun {
		mode = " (dry run: nothing written or committed)"
	}
	fmt.Fprintf(w, "redrive of %s%s\n", r.DLQ, mode)
	if r.Group != "" {
		fmt.Fprintf(w, "progress group: %s (resumed: %t)\n", r.Group, r.Resumed)
	}
	moved := "moved"
	if r.DryRun {
		moved = "would move"
	}
	rows := [][]string{
		{"examined", strconv.Itoa(r.Examined)},
		{moved, strconv.Itoa(r.Outcomes[outcomeMoved])},
		{"already moved by an interrupted run", strconv.Itoa(r.Outcomes[outcomeRecovered])},
		{"not selected (stay)", strconv.Itoa(r.Outcomes[outcomeUnselected])},
		{"undecodable (stay)", strconv.Itoa(r.Outcomes[outcomeUndecodable])},
		{"no target queue (stay)", strconv.Itoa(r.Outcomes[outcomeNoTarget])},
		{"held by the replay-count guard (stay)", strconv.Itoa(r.Outcomes[outcomeGuarded])},
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
		if err := writeTable(w, []string{"TARGET", moved}, trows); err != nil {
			return err
		}
	}
	if len(r.Guarded) > 0 {
		fmt.Fprintln(w)
		var grows [][]string
		for _, g := range r.Guarded {
			grows = append(grows, []string{strconv.Itoa(g.Partition), strconv.FormatInt(g.Offset, 10), g.ID, g.URN, strconv.Itoa(g.Count)})
		}
		if err := writeTable(w, []string{"PARTITION", "OFFSET", "ID", "URN", "REDRIVES"}, grows); err != nil {
			return err
		}
	}
	if r.Failed != "" {
		fmt.Fprintf(w, "\nstopped by an error: %s\n", r.Failed)
	}
	return nil
}

const redriveHelp = `Moves dead letters back to work (SPEC 8): each selected dead letter is
republished to --target, else its dead_letter.original_queue, else its
meta.queue, with the dead_letter block removed and attempts reset to 0
(every other byte unchanged), the record key kept, and its headers kept
except bq-attempts (0), bq-redrive-count (incremented) and
bq-redrive-source (the DLQ record it came from). --replay-bypass adds
bq-replay-bypass=true, seen by handlers as IsReplay(ctx).

Kafka (records are never deleted from a topic): progress is the offset of
a consumer group on the DLQ (--group; by default one derived from the DLQ,
the selectors and the target, so re-running the same command resumes it).
The run reads each partition from the group's offset up to the high-water
mark seen at the start. Before each republish bq stores in the commit
metadata where the copy will land; after the broker acknowledged the write
(acks=all) it commits the next offset. If the process dies between the write
and that commit, the next run finds the copy by its bq-redrive-source header
and does not write it again. So a run may be killed at any point and run
again: nothing is lost, nothing is redriven twice. Records that are not
selected, undecodable, without a target or guarded stay in the DLQ (they
are passed over by this group; a different selection or --group sees them
again). A dry run writes and commits nothing.

Pulsar: the DLQ subscription (--subscription) is consumed and each message
acknowledged only after its republish was acknowledged; messages that stay
are written back to the DLQ tail first (babelqueue.Redrive). A crash
between a republish and its acknowledgement redelivers that one message
(at-least-once).

The replay-count guard (--max-redrives, default 3) leaves a dead letter
that was already redriven that many times in the DLQ and reports it
(exit code 3). On a terminal, a progress bar shows long runs; a summary
table (or --json) ends every run.

` + connEnvHelp

const redriveExamples = `  # what would move, without writing anything
  bq redrive --broker kafka://127.0.0.1:9092 --queue orders --dry-run
  # move failed orders of the last day back, handlers skip side effects
  bq redrive --broker kafka://127.0.0.1:9092 --queue orders --reason failed \
      --since 24h --replay-bypass
  # at most 100 to a quarantine queue, JSON summary
  bq redrive --broker kafka://127.0.0.1:9092 --dlq orders.dlq --target orders.slow --max 100 --json
  bq redrive --broker pulsar://127.0.0.1:6650 --queue orders --urn urn:bq:orders:created`

func runRedrive(ctx context.Context, args []string, out, errOut io.Writer) error {
	fs := leafFlags("bq redrive", "bq redrive --broker URL (--queue Q | --dlq TOPIC) [selectors] [--target Q] [--max N] [--dry-run] [--replay-bypass] [--json]", redriveHelp, redriveExamples, errOut)
	var cf connFlags
	cf.register(fs)
	queue := fs.String("queue", "", "work queue; its DLQ is <queue>.dlq")
	dlq := fs.String("dlq", "", "dead-letter topic (overrides --queue)")
	var sel selectorFlags
	sel.register(fs)
	target := fs.String("target", "", "queue to move dead letters to (default: each one's original queue)")
	maxN := fs.Int("max", 0, "move at most this many (0: no limit)")
	maxRedrives := fs.Int("max-redrives", 3, "replay-count guard: leave a dead letter already redriven this many times (0: no guard)")
	dry := fs.Bool("dry-run", false, "report what would move; write and commit nothing")
	bypass := fs.Bool("replay-bypass", false, "mark redriven messages with bq-replay-bypass=true")
	group := fs.String("group", "", "Kafka consumer group holding the progress (default bq-redrive.<dlq>.<hash of selection>)")
	sub := fs.String("subscription", "bq-redrive", "Pulsar subscription on the DLQ")
	noProgress := fs.Bool("no-progress", false, "never show the progress bar")
	asJSON := fs.Bool("json", false, "print the summary as JSON")
	if err := parseLeaf(fs, args, errOut); err != nil {
		return err
	}
	topic := dlqName(*dlq, *queue)
	if topic == "" {
		return usageErrorf(fs, errOut, "--queue or --dlq is required")
	}
	if *maxN < 0 || *maxRedrives < 0 {
		return usageErrorf(fs, errOut, "--max and --max-redrives must be >= 0")
	}
	selector, err := sel.build()
	if err != nil {
		return usageErrorf(fs, errOut, "%v", err)
	}
	u, err := cf.url()
	if err != nil {
		return usageErrorf(fs, errOut, "%v", err)
	}
	if err := cf.check(u); err != nil {
		return usageErrorf(fs, errOut, "%v", err)
	}
	opts := redriveOptions{selector: selector, target: *target, max: *maxN, maxRedrives: *maxRedrives, dryRun: *dry, bypass: *bypass}

	var report *redriveReport
	var runErr error
	if u.Kind == kindKafka {
		k, err := cf.kafka(ctx, u)
		if err != nil {
			return err
		}
		defer k.close()
		g := *group
		if g == "" {
			g = defaultRedriveGroup(topic, sel.fingerprint()+"|"+*target)
		}
		report = newRedriveReport(topic, g, *dry)
		d := &kafkaRedriver{k: k, dlq: topic, group: g, opts: opts, report: report, partsOf: map[string]int{}, ends: map[targetPartition]int64{}}
		var bar *progressbar.ProgressBar
		if !*noProgress && !*asJSON && isTerminal(out) {
			d.opts.onTotal = func(n int) {
				bar = progressbar.NewOptions(n, progressbar.OptionSetWriter(os.Stderr), progressbar.OptionSetDescription("redrive "+topic),
					progressbar.OptionShowCount(), progressbar.OptionThrottle(100*time.Millisecond), progressbar.OptionClearOnFinish())
			}
			d.tick = func() {
				if bar != nil {
					_ = bar.Add(1)
				}
			}
		}
		runErr = d.run(ctx)
		if bar != nil {
			_ = bar.Finish()
		}
	} else {
		t, closeT, err := openPulsarForRedrive(ctx, &cf, u, *sub)
		if err != nil {
			return err
		}
		defer closeT()
		report, runErr = redriveTransport(ctx, t, topic, opts)
	}
	if runErr != nil {
		report.Failed = runErr.Error()
	}
	if *asJSON {
		if err := writeJSON(out, report); err != nil {
			return err
		}
	} else if err := report.write(out); err != nil {
		return err
	}
	if runErr != nil {
		return runErr
	}
	if report.Outcomes[outcomeGuarded] > 0 {
		return errPartial
	}
	return nil
}

// defaultRedriveGroup derives the progress group of a redrive from the DLQ
// and the selection.
func defaultRedriveGroup(dlq, selection string) string {
	sum := sha256.Sum256([]byte(selection))
	return "bq-redrive." + dlq + "." + hex.EncodeToString(sum[:4])
}

// redriveTransport runs babelqueue.Redrive over a transport that removes
// a message by acknowledging it (Pulsar; the in-memory transport in tests).
func redriveTransport(ctx context.Context, t babelqueue.Transport, dlq string, o redriveOptions) (*redriveReport, error) {
	report := newRedriveReport(dlq, "", o.dryRun)
	var guard *guardTransport
	if base, ok := t.(guardBase); ok {
		guard = &guardTransport{guardBase: base}
		t = guard
	}
	guarded := map[string]int{} // meta.id -> redrive count, of held messages
	ropts := []babelqueue.RedriveOption{
		babelqueue.WithRedriveSelector(func(env *babelqueue.Envelope) bool {
			ts := time.Now()
			if env.DeadLetter != nil && env.DeadLetter.FailedAt > 0 {
				ts = time.UnixMilli(env.DeadLetter.FailedAt)
			}
			if !o.selector.match(env.URN(), env.DeadLetter, ts) {
				return false
			}
			if guard != nil && o.maxRedrives > 0 {
				if n := countOf(guard.last); n >= o.maxRedrives {
					guarded[env.Meta.ID] = n
					return false
				}
			}
			return true
		}),
		babelqueue.WithRedrivePollTimeout(2 * time.Second),
	}
	if o.target != "" {
		ropts = append(ropts, babelqueue.WithRedriveTarget(o.target))
	}
	if o.max > 0 {
		ropts = append(ropts, babelqueue.WithRedriveMax(o.max))
	}
	if o.dryRun {
		ropts = append(ropts, babelqueue.WithRedriveDryRun())
	}
	if o.bypass {
		ropts = append(ropts, babelqueue.WithRedriveReplayBypass())
	}
	res, err := babelqueue.Redrive(ctx, t, dlq, ropts...)
	if res != nil {
		for _, it := range res.Items {
			item := redriveItem{ID: it.MessageID, URN: it.URN, Reason: it.Reason, Target: it.Target, Outcome: string(it.Outcome), Partition: -1, Offset: -1}
			if it.Outcome == babelqueue.RedriveMoved || it.Outcome == babelqueue.RedriveWouldMove {
				item.Outcome = outcomeMoved
			}
			if n, ok := guarded[it.MessageID]; ok && it.Outcome == babelqueue.RedriveUnselected {
				item.Outcome, item.Count = outcomeGuarded, n
				item.Note = fmt.Sprintf("already redriven %d times (--max-redrives %d)", n, o.maxRedrives)
			}
			if it.Err != nil {
				item.Note = it.Err.Error()
			}
			report.add(item)
		}
	}
	return report, err
}

// openPulsarForRedrive builds a Pulsar transport consuming the DLQ on a
// shared subscription from the earliest message.
func openPulsarForRedrive(ctx context.Context, cf *connFlags, u brokerURL, sub string) (babelqueue.Transport, func(), error) {
	p, err := cf.pulsar(ctx, u)
	if err != nil {
		return nil, nil, err
	}
	t, err := p.transport(bqpulsar.WithSubscription(sub), bqpulsar.WithSubscriptionType(pulsar.Shared),
		bqpulsar.WithInitialPosition(pulsar.SubscriptionPositionEarliest))
	if err != nil {
		p.client.Close()
		return nil, nil, err
	}
	return t, func() { t.Close(); p.client.Close() }, nil
}

// Package appdemo is `make demo`: the App's main job on the embedded
// Kafka-protocol broker. An App over the Kafka binding handles orders with
// two short retry tiers (1s, 2s) and a running Reinjector; some orders
// fail for a while and travel the tiers, some always fail and are
// dead-lettered with their dead_letter block; the demo prints a DLQ
// summary, redrives the dead letters whose cause was fixed, and ends with
// a line that accounts for every message by reading the topics back:
//
//	accounted: produced=13 handled=11 dead_lettered=4 redriven=2 in_dlq=2 lost=0
package appdemo

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/babelqueue/babelqueue-go/brokertest/devkafka"
	babelqueue "github.com/babelqueue/babelqueue-go/core"
	"github.com/babelqueue/babelqueue-go/core/redrive"
	"github.com/babelqueue/babelqueue-go/kafka"
)

// Config configures Run. The zero value runs on a fresh embedded broker,
// prints to standard output and gives up after DefaultTimeout.
type Config struct {
	// Out receives the narration; nil means os.Stdout.
	Out io.Writer
	// Log receives the library's logs (the App logs every failed handler
	// call at Error); nil discards them, the narration shows every step.
	Log *slog.Logger
	// Timeout bounds the whole run; zero means DefaultTimeout.
	Timeout time.Duration
}

// DefaultTimeout bounds a run.
const DefaultTimeout = 45 * time.Second

// The demo's settings.
const (
	workTopic    = "orders"
	dlqTopic     = "orders.dlq"
	resultsTopic = "orders.handled"
	maxAttempts  = 3
)

// tiers are the retry tiers: the first retry waits 1s, the second 2s.
var tiers = []time.Duration{time.Second, 2 * time.Second}

// Run runs the demo and returns its accounting. The error is non-nil when
// the run could not complete in time, or when a message is lost.
func Run(ctx context.Context, cfg Config) (*Accounting, error) {
	if cfg.Out == nil {
		cfg.Out = os.Stdout
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, cfg.Timeout)
	defer cancel()
	out := cfg.Out
	// Every line goes through the narrator, which the hooks print
	// through from other goroutines.
	narr := &narrator{out: out, start: time.Now()}
	say := narr.say

	broker, err := devkafka.Start(
		devkafka.WithTopics(3, workTopic, kafka.RetryTopic(workTopic, 1), kafka.RetryTopic(workTopic, 2)),
		devkafka.WithTopics(1, dlqTopic, resultsTopic),
		devkafka.WithLogger(cfg.Log))
	if err != nil {
		return nil, fmt.Errorf("starting the embedded broker: %w", err)
	}
	defer broker.Close()
	brokers := broker.Addrs()
	say("broker: embedded Kafka-protocol broker (kfake) on %s", brokers[0])
	say("topics: %s, %s, %s (3 partitions), %s, %s", workTopic, kafka.RetryTopic(workTopic, 1), kafka.RetryTopic(workTopic, 2), dlqTopic, resultsTopic)
	say("app: at most %d deliveries per message (WithMaxAttempts), retry tiers %v, a Reinjector carrying the tiers back", maxAttempts, tiers)
	say("")

	// The Reinjector runs in a consumer group of its own; the App's
	// transport names it too, so that its stale tier check reads that
	// group's offsets.
	common := []kafka.Option{kafka.WithBrokers(brokers...), kafka.WithRetryTiers(tiers...), kafka.WithLogger(cfg.Log),
		kafka.WithReinjectGroupID("appdemo-reinject")}
	tr, err := kafka.New(append(common, kafka.WithGroupID("appdemo"))...)
	if err != nil {
		return nil, err
	}
	defer tr.Close()
	rtr, err := kafka.New(append(common,
		kafka.WithReinjectHooks(narr), kafka.WithReinjectBacklogInterval(500*time.Millisecond))...)
	if err != nil {
		return nil, err
	}
	defer rtr.Close()

	h := &handler{fixed: map[string]bool{}, publish: func(ctx context.Context, id string) error {
		return tr.Publish(ctx, resultsTopic, id)
	}}
	app, err := babelqueue.NewApp(tr, babelqueue.WithDefaultQueue(workTopic), babelqueue.WithMaxAttempts(maxAttempts),
		babelqueue.WithPollTimeout(200*time.Millisecond), babelqueue.WithHooks(narr), babelqueue.WithLogger(cfg.Log),
		babelqueue.WithOnError(func(error) {}))
	if err != nil {
		return nil, err
	}
	app.Handle(urnOrderCreated, h.handle)

	// The consumer and the Reinjector run until the accounting is done.
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	errs := make(chan error, 2)
	reinjector, err := rtr.NewReinjector(workTopic)
	if err != nil {
		return nil, err
	}
	go func() { errs <- reinjector.Run(runCtx) }()
	go func() { errs <- app.Consume(runCtx, workTopic) }()
	running := 2
	defer func() {
		stop()
		for ; running > 0; running-- {
			<-errs
		}
	}()

	orders := script()
	say("publishing %d messages: 6 ok, 3 flaky (fail twice), 3 broken (always fail), 1 refund with no handler", len(orders))
	for _, o := range orders {
		if _, err := app.Publish(ctx, o.URN, map[string]any{"order_id": o.ID, "kind": o.Kind}, babelqueue.WithKey([]byte(o.ID))); err != nil {
			return nil, fmt.Errorf("publish %s: %w", o.ID, err)
		}
	}
	topics := topicsOf{work: workTopic, dlq: dlqTopic, results: resultsTopic}
	dead := 0
	for _, o := range orders {
		if o.Kind == kindBroken || o.URN != urnOrderCreated {
			dead++
		}
	}
	a, err := waitFor(ctx, brokers, topics, func(a *Accounting) bool {
		return a.Handled == len(orders)-dead && a.DeadLettered == dead
	})
	if err != nil {
		return nil, fmt.Errorf("waiting for the first pass: %w", err)
	}

	say("")
	narr.locked(func(out io.Writer) { printDLQ(out, a) })

	var fixed []string
	for _, o := range orders {
		if o.Fixed {
			h.fix(o.ID)
			fixed = append(fixed, o.ID)
		}
	}
	say("")
	say("the carrier fixed the addresses of %s: redriving those dead letters only", strings.Join(fixed, ", "))
	res, err := app.Redrive(ctx, dlqTopic, redrive.WithSelector(func(env *babelqueue.Envelope) bool {
		return contains(fixed, orderID(env))
	}))
	if err != nil {
		return nil, fmt.Errorf("redrive: %w", err)
	}
	say("redrive of %s: examined=%d moved=%d kept=%d", dlqTopic, res.Examined, res.Moved, res.Kept)
	if _, err := waitFor(ctx, brokers, topics, func(a *Accounting) bool {
		return a.Handled == len(orders)-dead+len(fixed) && a.Redriven == len(fixed)
	}); err != nil {
		return nil, fmt.Errorf("waiting for the redriven messages: %w", err)
	}
	stop()
	for ; running > 0; running-- {
		if err := <-errs; err != nil && !errors.Is(err, context.Canceled) {
			return nil, err
		}
	}
	// Read everything back once more, with the consumer stopped.
	if a, err = account(ctx, brokers, topics); err != nil {
		return nil, err
	}
	say("")
	say("still in %s: %s", dlqTopic, strings.Join(stillDead(a), ", "))
	say("%s", a.Line())
	if a.Lost > 0 {
		return a, fmt.Errorf("%w: %v", errLost, a.LostIDs)
	}
	return a, nil
}

// waitFor reads the topics back until done holds, or ctx ends.
func waitFor(ctx context.Context, brokers []string, t topicsOf, done func(*Accounting) bool) (*Accounting, error) {
	for {
		a, err := account(ctx, brokers, t)
		if err == nil && done(a) {
			return a, nil
		}
		select {
		case <-ctx.Done():
			if err == nil {
				err = fmt.Errorf("%w (last: %s)", ctx.Err(), a.Line())
			}
			return nil, err
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// printDLQ prints the DLQ summary: counts by reason and URN, then each
// dead letter with its dead_letter block.
func printDLQ(out io.Writer, a *Accounting) {
	byReason := map[string]int{}
	ids := make([]string, 0, len(a.DeadSeen))
	for id, env := range a.DeadSeen {
		byReason[env.DeadLetter.Reason+" "+env.URN()]++
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return orderID(a.DeadSeen[ids[i]]) < orderID(a.DeadSeen[ids[j]]) })
	keys := make([]string, 0, len(byReason))
	for k := range byReason {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	fmt.Fprintf(out, "DLQ summary: %s holds %d dead letters\n", dlqTopic, len(ids))
	for _, k := range keys {
		reason, urn, _ := strings.Cut(k, " ")
		fmt.Fprintf(out, "  %-12s %-28s %d\n", reason, urn, byReason[k])
	}
	for _, id := range ids {
		env := a.DeadSeen[id]
		fmt.Fprintf(out, "  %s  dead_letter: %s\n", orderID(env), deadLetterBlock(env))
	}
}

// deadLetterBlock returns the dead_letter member of env's body as compact
// JSON.
func deadLetterBlock(env *babelqueue.Envelope) string {
	body, err := env.Encode()
	if err != nil {
		return err.Error()
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(body, &top); err != nil {
		return err.Error()
	}
	return string(top["dead_letter"])
}

func orderID(env *babelqueue.Envelope) string {
	data, err := env.DataMap()
	if err != nil {
		return env.Meta.ID
	}
	id, _ := data["order_id"].(string)
	return id
}

func stillDead(a *Accounting) []string {
	var out []string
	for _, env := range a.DeadSeen {
		if !a.handledID[env.Meta.ID] {
			out = append(out, orderID(env))
		}
	}
	sort.Strings(out)
	return out
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

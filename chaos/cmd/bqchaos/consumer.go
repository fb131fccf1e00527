package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	pulsarclient "github.com/apache/pulsar-client-go/pulsar"

	"github.com/babelqueue/babelqueue-go/chaos"
	babelqueue "github.com/babelqueue/babelqueue-go/core"
	"github.com/babelqueue/babelqueue-go/kafka"
	"github.com/babelqueue/babelqueue-go/pulsar"
)

// URN is the job of every chaos envelope.
const URN = "urn:babel:chaos:item"

// errChaos is what the handler returns for a delivery it fails on purpose.
var errChaos = errors.New("chaos: failing on purpose")

// Shared settings of the driver and its consumers.
const (
	maxAttempts  = 4
	subscription = "chaos"
)

var tiers = []time.Duration{time.Second, 3 * time.Second}

// consumerMain is `bqchaos consumer`: one App consuming the work topic,
// recording every handling in its own journal before the handler returns.
// SIGTERM stops it gracefully (Consume returns, the transport closes and
// flushes its commits).
func consumerMain(args []string) int {
	fs := flag.NewFlagSet("bqchaos consumer", flag.ContinueOnError)
	broker := fs.String("broker", "", "kafka or pulsar")
	topic := fs.String("topic", "", "work topic")
	group := fs.String("group", "", "Kafka consumer group")
	dir := fs.String("dir", "", "run directory")
	proc := fs.String("proc", "", "incarnation name")
	work := fs.Duration("work", time.Millisecond, "time a handler takes")
	subType := fs.String("subscription-type", "shared", "Pulsar: shared or exclusive")
	concurrency := fs.Int("concurrency", 1, "handlers run at once (App WithConcurrency, OrderKey)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})).With("proc", *proc)
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()

	j, err := chaos.OpenJournal(filepath.Join(*dir, chaos.HandledFile(*proc)))
	if err != nil {
		log.Error("journal", "err", err)
		return 1
	}
	defer j.Close()

	var tr interface {
		babelqueue.Transport
		Close() error
	}
	switch *broker {
	case "kafka":
		tr, err = kafka.New(kafka.WithBrokers(kafkaBrokers()...), kafka.WithGroupID(*group),
			kafka.WithRetryTiers(tiers...), kafka.WithLogger(log))
	case "pulsar":
		st := pulsarclient.Shared
		if *subType == "exclusive" {
			st = pulsarclient.Exclusive
		}
		tr, err = pulsar.New(pulsar.WithServiceURL(os.Getenv("BQ_PULSAR_URL")),
			pulsar.WithSubscription(subscription), pulsar.WithSubscriptionType(st),
			pulsar.WithRepublishRetries(), pulsar.WithMaxAttempts(maxAttempts), pulsar.WithLogger(log))
	default:
		err = fmt.Errorf("unknown broker %q", *broker)
	}
	if err != nil {
		log.Error("transport", "err", err)
		return 1
	}
	app, err := babelqueue.NewApp(tr, babelqueue.WithDefaultQueue(*topic), babelqueue.WithMaxAttempts(maxAttempts),
		babelqueue.WithPollTimeout(500*time.Millisecond), babelqueue.WithLogger(log),
		babelqueue.WithOnError(func(err error) { log.Warn("app error", "err", err) }),
		babelqueue.WithOnWarning(func(err error) { log.Warn("app warning", "err", err) }),
		babelqueue.WithConcurrency(*concurrency, babelqueue.OrderKey))
	if err != nil {
		log.Error("app", "err", err)
		return 1
	}
	app.Handle(URN, func(ctx context.Context, env *babelqueue.Envelope) error {
		fail := chaos.ShouldFail(env.Meta.ID, env.Attempts)
		if *work > 0 {
			time.Sleep(*work)
		}
		h := chaos.Handling{At: time.Now(), ID: env.Meta.ID, Attempts: env.Attempts, OK: !fail}
		if err := j.Append(h.Line()); err != nil {
			// Without its record the outcome cannot be accounted: die like a
			// crash, leaving the message for redelivery.
			log.Error("record", "err", err)
			os.Exit(3)
		}
		if fail {
			return errChaos
		}
		return nil
	})
	err = app.Consume(ctx, *topic)
	cerr := tr.Close()
	if err != nil {
		log.Error("consume", "err", err)
		return 1
	}
	if cerr != nil {
		log.Error("close", "err", cerr)
		return 1
	}
	return 0
}

// Command quickstart is the README's Quick start: a complete BabelQueue
// service on Kafka. It creates its topics, handles orders with retry
// tiers and a dead-letter queue, runs a re-injector on its own consumer
// group, publishes one keyed order and stops gracefully on SIGINT or
// SIGTERM.
//
// The code between the quickstart:begin and quickstart:end lines is the
// README's Quick start, byte for byte (`make lint` checks it), and
// TestQuickstart runs it on the embedded broker in `make ci`.
//
// Run it against a local broker (`go run ./tools/cmd/bq dev kafka` in
// another terminal, or BQ_KAFKA_BROKERS):
//
//	go run ./examples/quickstart
package main

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	babelqueue "github.com/babelqueue/babelqueue-go/core"
	"github.com/babelqueue/babelqueue-go/kafka"
)

func main() {
	brokers := os.Getenv("BQ_KAFKA_BROKERS") // host:port[,host:port]
	if brokers == "" {
		brokers = "127.0.0.1:9092"
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, brokers, log); err != nil {
		log.Error("quickstart", "error", err)
		os.Exit(1)
	}
}

// quickstart:begin
// run is the whole service on brokers (host:port[,host:port], as
// BQ_KAFKA_BROKERS holds them): it returns nil once ctx is cancelled and
// every handler and the re-injector have stopped.
func run(ctx context.Context, brokers string, log *slog.Logger) error {
	tr, err := kafka.New(
		kafka.WithBrokers(brokers),
		kafka.WithGroupID("orders-workers"),
		// A failed order waits 5s in orders.retry.1, then 30s in
		// orders.retry.2; after its third delivery it goes to orders.dlq.
		kafka.WithRetryTiers(5*time.Second, 30*time.Second),
		kafka.WithLogger(log))
	if err != nil {
		return err // every option problem, joined
	}
	defer tr.Close()
	// orders (6 partitions), orders.retry.1, orders.retry.2 and orders.dlq;
	// topics that exist are left as they are.
	if err := tr.EnsureTopics(ctx, "orders", 6, 1); err != nil {
		return err
	}

	app, err := babelqueue.NewApp(tr,
		babelqueue.WithDefaultQueue("orders"),
		babelqueue.WithMaxAttempts(3),                      // deliveries, the first included
		babelqueue.WithConcurrency(8, babelqueue.OrderKey), // 8 at once; one key in order
		babelqueue.WithLogger(log))
	if err != nil {
		return err
	}
	err = app.Handle("urn:babel:orders:created", func(ctx context.Context, env *babelqueue.Envelope) error {
		var order struct {
			OrderID int64 `json:"order_id"`
		}
		if err := env.BindData(&order); err != nil {
			return err // retried through the tiers, then dead-lettered
		}
		log.Info("order created", "order_id", order.OrderID, "retries_before", env.Attempts)
		return nil
	})
	if err != nil {
		return err // a URN that Publish would refuse
	}

	// The re-injector carries due records from the tiers back to orders, in
	// a consumer group of its own (orders-workers.reinject): sharing the
	// App's would make the two rebalance each other.
	reinjector, err := tr.NewReinjector("orders")
	if err != nil {
		return err
	}

	// Messages with one key go to one partition: handled in order.
	id, err := app.Publish(ctx, "urn:babel:orders:created", map[string]any{"order_id": 1042},
		babelqueue.WithKey([]byte("customer-7")))
	if err != nil {
		return err
	}
	log.Info("published", "id", id)

	// Until SIGINT or SIGTERM: then no new delivery starts, the handlers
	// running finish and settle, and the re-injector commits what it wrote.
	ctx, stop := context.WithCancel(ctx)
	reinjected := make(chan error, 1)
	go func() { reinjected <- reinjector.Run(ctx) }()
	consumeErr := app.Consume(ctx, "orders")
	stop() // should Consume fail, the re-injector stops too
	return errors.Join(consumeErr, <-reinjected)
}

// quickstart:end

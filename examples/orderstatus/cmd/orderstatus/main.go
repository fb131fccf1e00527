// Command orderstatus runs the order status processor: it consumes the
// events and retry topics, projects order statuses into SQLite, retries
// records through the retry topic and dead-letters the rest.
//
// Settings come from the environment (see orderstatus.SettingsFromEnv):
//
//	KAFKA_BROKERS       host:port[,host:port...] (required)
//	EVENTS_TOPIC        default orders.events
//	RETRY_TOPIC         default orders.retry
//	DEAD_LETTER_TOPIC   default orders.dlq
//	CONSUMER_GROUP      default orderstatus
//	STORE_PATH          default orderstatus.db
//	RETRY_ATTEMPTS      default 5 (attempts in all, the first included)
//	RETRY_MIN_DELAY     default 1s
//	RETRY_MAX_DELAY     default 1m
//
// SIGTERM or SIGINT stops it gracefully: records already settled are
// committed, a record still waiting is left for its partition's next owner,
// and the exit status is 0. A record that neither the retry topic nor the
// dead-letter topic would store makes it exit 1 without committing it.
package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/babelqueue/babelqueue-go/examples/orderstatus"
)

func main() {
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	ctx, cancel := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer cancel()
	if err := run(ctx, os.Getenv, log); err != nil {
		log.Error("orderstatus: stopped", "error", err.Error())
		cancel()
		os.Exit(1)
	}
}

// run runs the processor until ctx ends (nil) or a record cannot be settled.
func run(ctx context.Context, getenv func(string) string, log *slog.Logger) error {
	settings, err := orderstatus.SettingsFromEnv(getenv)
	if err != nil {
		return err
	}

	store, err := orderstatus.OpenSQLite(ctx, settings.StorePath)
	if err != nil {
		return err
	}
	defer store.Close()
	producer := orderstatus.NewKafkaProducer(settings.Brokers)
	defer producer.Close()
	p, err := orderstatus.NewProjector(settings, store, producer, orderstatus.WithLogger(log))
	if err != nil {
		return err
	}
	reader := orderstatus.NewReader(settings)
	log.Info("orderstatus: started", "brokers", fmt.Sprint(settings.Brokers), "events", settings.EventsTopic,
		"retry", settings.RetryTopic, "dlq", settings.DeadLetterTopic, "group", settings.GroupID, "store", settings.StorePath)
	runErr := orderstatus.Run(ctx, p, reader)
	closeErr := reader.Close()
	if runErr != nil {
		return runErr
	}
	if closeErr != nil && !errors.Is(closeErr, context.Canceled) {
		log.Warn("orderstatus: closing the reader", "error", closeErr.Error())
	}
	log.Info("orderstatus: stopped gracefully")
	return nil
}

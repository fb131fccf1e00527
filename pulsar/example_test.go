package pulsar_test

import (
	"context"
	"log"
	"os/signal"
	"syscall"

	pulsarclient "github.com/apache/pulsar-client-go/pulsar"

	babelqueue "github.com/babelqueue/babelqueue-go/core"
	"github.com/babelqueue/babelqueue-go/pulsar"
)

// A Shared subscription retries a failing message by negative
// acknowledgement: the broker's redelivery count carries the attempts.
func ExampleNew_shared() {
	tr, err := pulsar.New(
		pulsar.WithServiceURL("pulsar://127.0.0.1:6650"),
		pulsar.WithSubscription("orders-service"),
		pulsar.WithSubscriptionType(pulsarclient.Shared),
	)
	if err != nil {
		log.Fatal(err)
	}
	defer tr.Close()

	app, err := babelqueue.NewApp(tr, babelqueue.WithDefaultQueue("orders"))
	if err != nil {
		panic(err)
	}
	if _, err := app.Publish(context.Background(), "urn:babel:orders:created", map[string]any{"order_id": 1042}); err != nil {
		log.Fatal(err)
	}
}

// An Exclusive subscription retries by republishing to its own topic, so
// the attempts travel in the message itself.
func ExampleNew_exclusive() {
	tr, err := pulsar.New(
		pulsar.WithServiceURL("pulsar://127.0.0.1:6650"),
		pulsar.WithTopicPrefix("acme", "orders"),
		pulsar.WithSubscriptionType(pulsarclient.Exclusive),
		pulsar.WithRepublishRetries(),
	)
	if err != nil {
		log.Fatal(err)
	}
	defer tr.Close()
}

// A Consumer routes each message of a queue to the handler of its URN.
func ExampleNewConsumer() {
	tr, err := pulsar.New(
		pulsar.WithServiceURL("pulsar://127.0.0.1:6650"),
		pulsar.WithSubscriptionType(pulsarclient.Shared),
	)
	if err != nil {
		log.Fatal(err)
	}
	defer tr.Close()

	c := pulsar.NewConsumer(tr, "orders", map[string]babelqueue.Handler{
		"urn:babel:orders:created": func(ctx context.Context, env *babelqueue.Envelope) error {
			log.Printf("order created: trace %s, attempt %d", env.TraceID, env.Attempts)
			return nil
		},
	}, babelqueue.WithOnRoutingMismatch(func(property, body string, _ *babelqueue.Envelope) {
		log.Printf("bq-job %s routed a %s body", property, body)
	}))

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	if err := c.Run(ctx); err != nil {
		log.Fatal(err)
	}
}

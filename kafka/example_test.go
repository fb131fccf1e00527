package kafka_test

import (
	"context"
	"fmt"
	"log"
	"time"

	babelqueue "github.com/babelqueue/babelqueue-go/core"
	"github.com/babelqueue/babelqueue-go/kafka"
)

// A worker consumes "orders" and retries failures through the retry tiers;
// a separate process (or goroutine) runs the Reinjector for those tiers.
func Example() {
	ctx := context.Background()
	tr, err := kafka.New(
		kafka.WithBrokers("127.0.0.1:9092"),
		kafka.WithGroupID("orders-workers"),
		kafka.WithRetryTiers(kafka.DefaultRetryTiers...),
	)
	if err != nil {
		log.Fatal(err)
	}
	defer tr.Close()
	// Create orders, orders.retry.1..4 (LogAppendTime) and orders.dlq.
	if err := tr.EnsureTopics(ctx, "orders", 6, 1); err != nil {
		log.Fatal(err)
	}
	app, err := babelqueue.NewApp(tr, babelqueue.WithDefaultQueue("orders"), babelqueue.WithMaxAttempts(5))
	if err != nil {
		panic(err)
	}
	app.Handle("urn:babel:orders:created", func(ctx context.Context, env *babelqueue.Envelope) error {
		var order struct {
			OrderID int `json:"order_id"`
		}
		return env.BindData(&order)
	})
	if err := app.Consume(ctx, "orders"); err != nil {
		log.Fatal(err)
	}
}

// The re-injector joins a consumer group of its own, here
// "orders-workers.reinject", never the App's "orders-workers".
func ExampleReinjector() {
	tr, err := kafka.New(
		kafka.WithBrokers("127.0.0.1:9092"),
		kafka.WithGroupID("orders-workers"),
		kafka.WithRetryTiers(kafka.DefaultRetryTiers...),
	)
	if err != nil {
		log.Fatal(err)
	}
	defer tr.Close()
	r, err := tr.NewReinjector("orders")
	if err != nil {
		log.Fatal(err)
	}
	if err := r.Run(context.Background()); err != nil {
		log.Fatal(err)
	}
}

// SCRAM over TLS, as a managed cluster usually requires.
func ExampleWithSASLSCRAM() {
	tr, err := kafka.New(
		kafka.WithBrokers("broker-1:9096", "broker-2:9096"),
		kafka.WithSASLSCRAM(kafka.SCRAMSHA512, "svc-orders", "secret"),
		kafka.WithLinger(2*time.Millisecond),
	)
	if err != nil {
		log.Fatal(err)
	}
	defer tr.Close()
}

// The retry of a record that had attempts attempts goes to tier
// min(attempts, N-1)+1: the last tier repeats.
func ExampleTierForAttempt() {
	tiers := len(kafka.DefaultRetryTiers)
	for attempts := 0; attempts < 6; attempts++ {
		fmt.Println(attempts, kafka.RetryTopic("orders", kafka.TierForAttempt(attempts, tiers)))
	}
	// Output:
	// 0 orders.retry.1
	// 1 orders.retry.2
	// 2 orders.retry.3
	// 3 orders.retry.4
	// 4 orders.retry.4
	// 5 orders.retry.4
}

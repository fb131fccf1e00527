package babelqueue_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	babelqueue "github.com/babelqueue/babelqueue-go/core"
	"github.com/babelqueue/babelqueue-go/core/bqtest"
	"github.com/babelqueue/babelqueue-go/core/redrive"
	"github.com/babelqueue/babelqueue-go/core/wire"
)

// An App publishes envelopes and routes each consumed message to the
// handler of its URN. Drain handles what is queued and returns.
func Example() {
	ctx := context.Background()
	mem := bqtest.NewInMemoryTransport()
	app, err := babelqueue.NewApp(mem, babelqueue.WithDefaultQueue("orders"), babelqueue.WithPollTimeout(10*time.Millisecond))
	if err != nil {
		panic(err)
	}

	app.Handle("urn:babel:orders:created", func(ctx context.Context, env *babelqueue.Envelope) error {
		var order struct {
			OrderID int `json:"order_id"`
		}
		if err := env.BindData(&order); err != nil {
			return err
		}
		fmt.Println("order", order.OrderID, "from queue", env.Meta.Queue, "attempt", env.Attempts)
		return nil
	})

	if _, err := app.Publish(ctx, "urn:babel:orders:created", map[string]any{"order_id": 1042}); err != nil {
		fmt.Println(err)
		return
	}
	n, err := app.Drain(ctx)
	fmt.Println("handled", n, err)
	// Output:
	// order 1042 from queue orders attempt 0
	// handled 1 <nil>
}

// A handler that keeps failing is retried up to the max attempts, then
// dead-lettered to <queue>.dlq with the reason, the error and its Go type.
func ExampleWithMaxAttempts() {
	ctx := context.Background()
	mem := bqtest.NewInMemoryTransport()
	app, err := babelqueue.NewApp(mem,
		babelqueue.WithDefaultQueue("payments"),
		babelqueue.WithMaxAttempts(3),
		babelqueue.WithPollTimeout(10*time.Millisecond),
		babelqueue.WithOnError(func(error) {}), // errors are also logged
	)
	if err != nil {
		panic(err)
	}
	app.Handle("urn:babel:payments:charge", func(ctx context.Context, env *babelqueue.Envelope) error {
		fmt.Println("charging, attempt", env.Attempts)
		return errors.New("card declined")
	})
	app.Publish(ctx, "urn:babel:payments:charge", map[string]any{"amount": 10})
	app.Drain(ctx)

	dl, _ := wire.DeadLetterOf([]byte(mem.Messages("payments.dlq")[0].Body))
	fmt.Println(dl.Reason, *dl.Error, *dl.Exception, dl.OriginalQueue, dl.Attempts)
	// Output:
	// charging, attempt 0
	// charging, attempt 1
	// charging, attempt 2
	// failed card declined *errors.errorString payments 3
}

// App.Redrive moves dead letters back to the queue they failed on. With the
// replay bypass, the handler can skip the effects already done.
func ExampleApp_Redrive() {
	ctx := context.Background()
	mem := bqtest.NewInMemoryTransport()
	app, err := babelqueue.NewApp(mem,
		babelqueue.WithDefaultQueue("mail"),
		babelqueue.WithMaxAttempts(1),
		babelqueue.WithPollTimeout(10*time.Millisecond),
		babelqueue.WithOnError(func(error) {}),
	)
	if err != nil {
		panic(err)
	}
	broken := true
	app.Handle("urn:babel:mail:welcome", func(ctx context.Context, env *babelqueue.Envelope) error {
		err := babelqueue.BypassExternalEffects(ctx, func() error {
			fmt.Println("sending the e-mail")
			return nil
		})
		if err != nil {
			return err
		}
		if broken {
			return errors.New("template store down")
		}
		fmt.Println("stored, replay:", babelqueue.IsReplay(ctx))
		return nil
	})
	app.Publish(ctx, "urn:babel:mail:welcome", map[string]any{"user": 7})
	app.Drain(ctx)
	broken = false

	res, err := redrive.Run(ctx, mem, "mail.dlq",
		redrive.WithReplayBypass(),
		redrive.WithPollTimeout(10*time.Millisecond))
	fmt.Println("moved", res.Moved, "kept", res.Kept, err)
	app.Drain(ctx)
	// Output:
	// sending the e-mail
	// moved 1 kept 0 <nil>
	// stored, replay: true
}

// A bqtest.FakeClock drives delayed delivery in tests.
func ExampleFakeClock() {
	ctx := context.Background()
	clock := bqtest.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	mem := bqtest.NewInMemoryTransport(bqtest.WithMemoryClock(clock))
	app, err := babelqueue.NewApp(mem, babelqueue.WithPollTimeout(10*time.Millisecond))
	if err != nil {
		panic(err)
	}
	app.Handle("urn:babel:reminders:due", func(context.Context, *babelqueue.Envelope) error {
		fmt.Println("reminder at", clock.Now().Format(time.TimeOnly))
		return nil
	})
	app.Publish(ctx, "urn:babel:reminders:due", nil, babelqueue.WithDelay(5*time.Minute))

	n, _ := app.Drain(ctx)
	fmt.Println("handled before the delay:", n)
	clock.Advance(5 * time.Minute)
	n, _ = app.Drain(ctx)
	fmt.Println("handled after the delay:", n)
	// Output:
	// handled before the delay: 0
	// reminder at 00:05:00
	// handled after the delay: 1
}

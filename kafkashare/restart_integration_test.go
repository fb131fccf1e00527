//go:build integration && restart

package kafkashare

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/babelqueue/babelqueue-go/brokertest"
	babelqueue "github.com/babelqueue/babelqueue-go/core"
)

// TestRestartIdempotentPublish publishes from four goroutines through the
// idempotent producer while the broker is killed with -9 and started
// again. Two share one transport and give each publish 60 s, so franz-go
// retries it across the restart under the same producer id and sequence.
// Two give each publish 1 s on a new transport: one started while the
// broker is down finds no broker, its record is failed before any request
// carried it, and the publish ends unknown; each such publish is
// republished under the same meta.id. (franz-go fails a record only while
// no unanswered request carried it, so a record sent before the kill
// waits for the broker whatever its deadline.) The topic read back holds
// every acknowledged and republished id exactly once (duplicates=0). Run
// by `make restart-tests` on a broker of its own.
func TestRestartIdempotentPublish(t *testing.T) {
	topic := newTopic(t, 3)
	tr := newTransport(t)
	app, err := babelqueue.NewApp(tr, babelqueue.WithDefaultQueue(topic))
	if err != nil {
		t.Fatal(err)
	}
	var (
		out brokertest.Outcomes
		seq atomic.Int64
	)
	publishWithin := func(app *babelqueue.App, wait time.Duration) func() {
		return func() {
			n := seq.Add(1)
			id := fmt.Sprintf("%s-%06d", topic, n)
			ctx, cancel := context.WithTimeout(context.Background(), wait)
			_, err := app.Publish(ctx, urn, map[string]int64{"n": n}, babelqueue.WithEnvelopeOptions(babelqueue.WithID(id)))
			cancel()
			out.Add(id, err, errors.Is(err, babelqueue.ErrPublishUnknown))
			time.Sleep(10 * time.Millisecond)
		}
	}
	hasty := func() {
		own, err := New(WithBrokers(brokertest.KafkaBrokers(t)...), WithShareGroup("unused"))
		if err != nil {
			t.Error(err)
			return
		}
		defer own.Close()
		ownApp, err := babelqueue.NewApp(own, babelqueue.WithDefaultQueue(topic))
		if err != nil {
			t.Error(err)
			return
		}
		publishWithin(ownApp, time.Second)()
	}
	patient := publishWithin(app, 60*time.Second)
	outage := brokertest.Outage{Broker: "kafka", Before: 3 * time.Second, Down: 3 * time.Second, After: 3 * time.Second}
	back := outage.Run(t, patient, patient, hasty, hasty)
	if len(out.Unknown) == 0 {
		t.Fatal("no publish ended unknown while the broker was down: the republish path went untested")
	}

	var republished []string
	for _, err := range out.Unknown {
		var u *babelqueue.UnknownPublishError
		if !errors.As(err, &u) {
			t.Fatalf("unknown outcome without *UnknownPublishError: %v", err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		_, rerr := app.Republish(ctx, err)
		cancel()
		if rerr != nil {
			t.Fatalf("republish %s: %v", u.ID, rerr)
		}
		republished = append(republished, u.ID)
	}
	recs := readAll(t, topic, len(out.Acked)+len(republished), 60*time.Second)
	count := map[string]int{}
	for _, r := range recs {
		env, err := babelqueue.Decode(r.Value)
		if err != nil {
			t.Fatalf("undecodable record: %v", err)
		}
		count[env.Meta.ID]++
	}
	lost, dups, _ := out.Tally(count, republished)
	line := fmt.Sprintf("restart: broker=kafkashare published=%d acked=%d unknown=%d republished=%d refused=%d lost=%d duplicates=%d down=%s",
		seq.Load(), len(out.Acked), len(out.Unknown), len(republished), len(out.Refused), lost, dups, back.Round(100*time.Millisecond))
	fmt.Println(line)
	t.Log(line)
	if lost != 0 || dups != 0 {
		t.Fatalf("lost=%d duplicates=%d, want 0 and 0", lost, dups)
	}
}

// TestRestartShareConsumers: the killed-consumers scenario with the broker
// killed -9 and started again while the first consumer process handles
// (it goes on after the restart); lost=0, duplicates within the records
// acquired per kill and across the restart.
func TestRestartShareConsumers(t *testing.T) {
	killedConsumers(t, 1500, 3, func() {
		brokertest.Outage{Broker: "kafka", Down: 3 * time.Second}.Run(t)
	})
}

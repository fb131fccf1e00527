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
// again. Each publish may wait 60 s, so franz-go retries it across the
// restart under the same producer id and sequence; an unknown outcome is
// republished under the same meta.id until acknowledged. The topic read
// back holds every acknowledged id exactly once (duplicates=0). Run by
// `make restart-tests` on a broker of its own.
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
	publish := func() {
		n := seq.Add(1)
		id := fmt.Sprintf("%s-%06d", topic, n)
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		_, err := app.Publish(ctx, urn, map[string]int64{"n": n}, babelqueue.WithEnvelopeOptions(babelqueue.WithID(id)))
		cancel()
		out.Add(id, err, errors.Is(err, babelqueue.ErrPublishUnknown))
		time.Sleep(10 * time.Millisecond)
	}
	outage := brokertest.Outage{Broker: "kafka", Before: 3 * time.Second, Down: 3 * time.Second, After: 3 * time.Second}
	back := outage.Run(t, publish, publish, publish, publish)

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

//go:build integration && restart

package kafka

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

// TestRestartPublishOutcomes publishes from four goroutines while the
// broker is killed with -9 and started again, and sorts every publish into
// acked, unknown (ErrPublishUnknown) and refused (any other error). Then
// it republishes the unknown ones with App.Republish and reads the topic
// back: no acked or unknown id is missing, no refused id was stored (that
// is what one attempt per Writer call guarantees), and duplicates are
// counted. Run by `make restart-tests` on a broker of its own.
func TestRestartPublishOutcomes(t *testing.T) {
	tr := itTransport(t)
	topic := uniq("restart")
	app := itApp(t, tr, topic, 3)

	var (
		out brokertest.Outcomes
		seq atomic.Int64
	)
	publish := func() {
		n := seq.Add(1)
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		id := fmt.Sprintf("%s-%06d", topic, n)
		_, err := app.Publish(ctx, "urn:t:restart", map[string]int64{"n": n}, babelqueue.WithEnvelopeOptions(babelqueue.WithID(id)))
		cancel()
		out.Add(id, err, errors.Is(err, babelqueue.ErrPublishUnknown))
		time.Sleep(20 * time.Millisecond)
	}
	outage := brokertest.Outage{Broker: "kafka", Before: 3 * time.Second, Down: 4 * time.Second, After: 5 * time.Second}
	back := outage.Run(t, publish, publish, publish, publish)
	acked, refused, unknown := out.Acked, out.Refused, out.Unknown

	// Republish every unknown outcome until it is acknowledged.
	var republished []string
	for _, err := range unknown {
		var u *babelqueue.UnknownPublishError
		if !errors.As(err, &u) {
			t.Fatalf("unknown outcome without *UnknownPublishError: %v", err)
		}
		for attempt := 0; ; attempt++ {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			_, rerr := app.Republish(ctx, err)
			cancel()
			if rerr == nil {
				break
			}
			if attempt == 20 {
				t.Fatalf("republish %s: %v", u.ID, rerr)
			}
			if errors.Is(rerr, babelqueue.ErrPublishUnknown) {
				err = rerr
			}
			time.Sleep(500 * time.Millisecond)
		}
		republished = append(republished, u.ID)
	}

	total := len(acked) + len(unknown) + len(refused)
	if len(refused) == 0 || len(acked) == 0 {
		t.Errorf("acked=%d refused=%d: the run did not cover both outcomes (the broker was down %s)", len(acked), len(refused), back)
	}
	// Four publishers write every 20 ms: the kill -9 cuts some write after
	// its produce request went out, which one attempt per write reports as
	// unknown. None means the classification lost them (kafka-go retrying
	// inside a write would turn them into later dial errors: refused).
	if len(unknown) == 0 {
		t.Errorf("no publish had an unknown outcome across the broker kill (acked=%d refused=%d)", len(acked), len(refused))
	}
	expect := len(acked) + len(republished)
	recs := readTopic(t, topic, expect, 60*time.Second, 3*time.Second)
	count := map[string]int{}
	for _, r := range recs {
		env, err := babelqueue.Decode(r.Value)
		if err != nil {
			t.Fatalf("undecodable record at %d/%d: %v", r.Partition, r.Offset, err)
		}
		count[env.Meta.ID]++
	}
	lost, dups, refusedStored := out.Tally(count, republished)
	t.Logf("restart: broker=kafka published=%d acked=%d unknown=%d refused=%d lost=%d duplicates=%d refused_stored=%d down=%s",
		total, len(acked), len(unknown), len(refused), lost, dups, refusedStored, back.Round(100*time.Millisecond))
	fmt.Printf("restart: broker=kafka published=%d acked=%d unknown=%d refused=%d lost=%d duplicates=%d refused_stored=%d\n",
		total, len(acked), len(unknown), len(refused), lost, dups, refusedStored)
	if lost != 0 || refusedStored != 0 {
		t.Fatalf("lost=%d refused_stored=%d, want 0 and 0", lost, refusedStored)
	}
}

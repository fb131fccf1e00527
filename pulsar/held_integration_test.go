//go:build integration

package pulsar

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	"github.com/babelqueue/babelqueue-go/brokertest"
	babelqueue "github.com/babelqueue/babelqueue-go/core"
	"github.com/babelqueue/babelqueue-go/core/bqtest"
)

// subscriptionStats is what the admin API reports of one subscription.
type subscriptionStats struct {
	MsgBacklog      int64 `json:"msgBacklog"`
	UnackedMessages int64 `json:"unackedMessages"`
}

// subscriptionStatsOf reads the stats of subscription sub of queue (a bare
// name in public/default) from the admin API.
func subscriptionStatsOf(t *testing.T, queue, sub string) subscriptionStats {
	t.Helper()
	resp, err := http.Get(brokertest.PulsarAdminURL(t) + "/admin/v2/persistent/public/default/" + queue + "/stats")
	if err != nil {
		t.Fatalf("topic stats of %s: %v", queue, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("topic stats of %s: HTTP %d", queue, resp.StatusCode)
	}
	var stats struct {
		Subscriptions map[string]subscriptionStats `json:"subscriptions"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&stats); err != nil {
		t.Fatalf("topic stats of %s: %v", queue, err)
	}
	s, ok := stats.Subscriptions[sub]
	if !ok {
		t.Fatalf("topic %s has no subscription %s", queue, sub)
	}
	return s
}

// waitStats polls the stats of sub on queue until ok holds, failing the
// test after d with the last stats seen.
func waitStats(t *testing.T, queue, sub string, d time.Duration, what string, ok func(subscriptionStats) bool) subscriptionStats {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		s := subscriptionStatsOf(t, queue, sub)
		if ok(s) {
			return s
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s: %+v", what, s)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// testHeldMessage publishes 2,001 messages and handles them 32 at a time
// with OrderKey on a subscription of type st while the handler of one of
// them blocks: every other message is handled and acknowledged, the
// broker reports exactly that one outstanding, and once released the
// backlog drains to 0.
func testHeldMessage(t *testing.T, st pulsar.SubscriptionType) {
	const others, inFlight, heldN = 2000, 32, 137
	q := uniqueQueue(t)
	tr := newIntegrationTransport(t, WithSubscriptionType(st), WithRepublishRetries())
	if _, err := tr.consumerFor(q); err != nil { // subscribe before publishing
		t.Fatal(err)
	}
	pub, err := babelqueue.NewApp(newIntegrationTransport(t, WithSubscriptionType(pulsar.Shared)))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var wg sync.WaitGroup
	var failed atomic.Value
	const publishers = 8
	for p := range publishers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := p; i <= others; i += publishers {
				// The held message has a key of its own: under OrderKey
				// it holds back only its own lane.
				key := fmt.Sprintf("key-%d", i%50)
				if i == heldN {
					key = "held"
				}
				if _, err := pub.Publish(ctx, "urn:it:held", bqtest.KeyedSeq{K: i % 50, N: i}, babelqueue.ToQueue(q), babelqueue.WithKey([]byte(key))); err != nil {
					failed.CompareAndSwap(nil, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if err, _ := failed.Load().(error); err != nil {
		t.Fatal(err)
	}

	release := make(chan struct{})
	var heldIn, heldOut atomic.Bool
	var mu sync.Mutex
	seen := make(map[int]int, others+1)
	app, err := babelqueue.NewApp(tr, babelqueue.WithPollTimeout(time.Second), babelqueue.WithConcurrency(inFlight, babelqueue.OrderKey))
	if err != nil {
		t.Fatal(err)
	}
	app.Handle("urn:it:held", func(hctx context.Context, env *babelqueue.Envelope) error {
		var m bqtest.KeyedSeq
		if err := env.BindData(&m); err != nil {
			return err
		}
		if m.N == heldN {
			heldIn.Store(true)
			select {
			case <-release:
			case <-hctx.Done():
				return hctx.Err()
			}
			heldOut.Store(true)
		}
		mu.Lock()
		seen[m.N]++
		mu.Unlock()
		return nil
	})
	start := time.Now()
	runApp(t, app, q)
	handledOthers := func() int {
		mu.Lock()
		defer mu.Unlock()
		n := len(seen)
		if seen[heldN] > 0 {
			n--
		}
		return n
	}
	for deadline := time.Now().Add(time.Minute); handledOthers() < others || !heldIn.Load(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d others handled, held message in its handler: %v", handledOthers(), others, heldIn.Load())
		}
	}
	tookOthers := time.Since(start)
	// The broker sees every other message acknowledged: the held one is
	// the whole backlog, and the only message unacknowledged.
	held := waitStats(t, q, DefaultSubscription, 20*time.Second, "a backlog of the held message alone",
		func(s subscriptionStats) bool { return s.MsgBacklog == 1 && s.UnackedMessages == 1 })
	if heldOut.Load() {
		t.Fatal("the held handler returned before its release")
	}
	// It stays so: nothing acknowledges the held message behind its back.
	time.Sleep(time.Second)
	if s := subscriptionStatsOf(t, q, DefaultSubscription); s.MsgBacklog != 1 || s.UnackedMessages != 1 {
		t.Fatalf("while held: %+v, want a backlog and an unacked count of 1", s)
	}
	close(release)
	drained := waitStats(t, q, DefaultSubscription, 30*time.Second, "the backlog to drain after the release",
		func(s subscriptionStats) bool { return s.MsgBacklog == 0 && s.UnackedMessages == 0 })
	mu.Lock()
	defer mu.Unlock()
	dups := 0
	for _, c := range seen {
		dups += c - 1
	}
	t.Logf("pulsar %s held message: %d others handled in %v with #%d held; broker while held %+v, after release %+v; %d duplicate handlings",
		subscriptionTypeName(st), others, tookOthers.Round(time.Millisecond), heldN, held, drained, dups)
	if seen[heldN] != 1 || len(seen) != others+1 {
		t.Fatalf("handled %d distinct messages, the held one %d times", len(seen), seen[heldN])
	}
	if dups != 0 {
		t.Errorf("%d duplicate handlings in a run without failures", dups)
	}
}

func TestIntegrationAppHeldMessageBlocksNothingShared(t *testing.T) {
	testHeldMessage(t, pulsar.Shared)
}

func TestIntegrationAppHeldMessageBlocksNothingKeyShared(t *testing.T) {
	testHeldMessage(t, pulsar.KeyShared)
}

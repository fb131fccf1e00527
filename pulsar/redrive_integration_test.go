//go:build integration

package pulsar

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"

	"github.com/babelqueue/babelqueue-go/brokertest"
	babelqueue "github.com/babelqueue/babelqueue-go/core"
	"github.com/babelqueue/babelqueue-go/core/redrive"
	"github.com/babelqueue/babelqueue-go/core/wire"
)

const (
	urnA = "urn:bq:test:redrive-a"
	urnB = "urn:bq:test:redrive-b"
)

// deadLetterBody returns a dead letter of urn whose original queue is
// queue; id is its meta.id.
func deadLetterBody(t *testing.T, urn, queue, id string) []byte {
	t.Helper()
	env, err := babelqueue.Make(urn, map[string]any{"id": id}, babelqueue.WithQueue(queue), babelqueue.WithID(id))
	if err != nil {
		t.Fatal(err)
	}
	b, err := env.Encode()
	if err != nil {
		t.Fatal(err)
	}
	b, err = wire.AnnotateDeadLetter(b, wire.DeadLetter{
		Reason: wire.ReasonFailed, FailedAt: time.Now().UnixMilli(), OriginalQueue: queue, Attempts: 3, Lang: "go",
	})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// seedDLQ writes one dead letter per id to dlq, with key "k-<id>",
// ordering key "o-<id>" and a traceparent, one entry each.
func seedDLQ(t *testing.T, c pulsar.Client, dlq, queue, urn string, ids ...string) {
	t.Helper()
	p := rawProducer(t, c, dlq)
	for _, id := range ids {
		_, err := p.Send(context.Background(), &pulsar.ProducerMessage{
			Payload:     deadLetterBody(t, urn, queue, id),
			Key:         "k-" + id,
			OrderingKey: "o-" + id,
			Properties:  map[string]string{"traceparent": "00-" + fmt.Sprintf("%032x", len(id)) + "-00f067aa0ba902b7-01", "bq-job": urn},
		})
		if err != nil {
			t.Fatalf("seed %s: %v", dlq, err)
		}
	}
}

// drainAll reads topic on its own subscription sub (acknowledging) until
// nothing arrives for wait, and returns the messages.
func drainAll(t *testing.T, c pulsar.Client, topic, sub string, wait time.Duration) []pulsar.Message {
	t.Helper()
	cons, err := c.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: sub, Type: pulsar.Exclusive,
		SubscriptionInitialPosition: pulsar.SubscriptionPositionEarliest})
	if err != nil {
		t.Fatalf("subscribe %s: %v", topic, err)
	}
	defer cons.Close()
	var out []pulsar.Message
	for {
		ctx, cancel := context.WithTimeout(context.Background(), wait)
		m, err := cons.Receive(ctx)
		cancel()
		if err != nil {
			return out
		}
		out = append(out, m)
		if err := cons.Ack(m); err != nil {
			t.Fatalf("ack: %v", err)
		}
	}
}

// idsOf returns the meta.id of each message body, in order.
func idsOf(t *testing.T, msgs []pulsar.Message) []string {
	t.Helper()
	out := make([]string, 0, len(msgs))
	for _, m := range msgs {
		env, err := babelqueue.Decode(m.Payload())
		if err != nil {
			out = append(out, "undecodable:"+string(m.Payload()))
			continue
		}
		out = append(out, env.Meta.ID)
	}
	return out
}

func runRedrive(t *testing.T, tr *Transport, dlq string, opts ...redrive.Option) (*redrive.Result, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	all := append([]redrive.Option{redrive.WithPollTimeout(2 * time.Second)}, opts...)
	return redrive.Run(ctx, tr, dlq, all...)
}

func outcomes(res *redrive.Result) []string {
	var out []string
	for _, it := range res.Items {
		out = append(out, it.MessageID+"="+string(it.Outcome))
	}
	return out
}

func TestIntegrationRedriveMovesSelectedKeepsTheRestInPlace(t *testing.T) {
	c := rawClient(t)
	queue := uniqueQueue(t)
	dlq := DeadLetterQueue(queue)
	seedDLQ(t, c, dlq, queue, urnA, "a1")
	seedDLQ(t, c, dlq, queue, urnB, "b1")
	seedDLQ(t, c, dlq, queue, urnA, "a2")
	rawSend(t, c, dlq, &pulsar.ProducerMessage{Payload: []byte("not json")})
	tr := newIntegrationTransport(t, WithSubscriptionType(pulsar.Shared))

	res, err := runRedrive(t, tr, dlq, redrive.WithSelector(redrive.SelectURN(urnA)))
	if err != nil {
		t.Fatalf("Redrive: %v", err)
	}
	want := []string{"a1=moved", "b1=unselected", "a2=moved", "=undecodable"}
	if got := outcomes(res); !slices.Equal(got, want) {
		t.Fatalf("outcomes = %v, want %v", got, want)
	}
	if res.Moved != 2 || res.Kept != 2 || res.Examined != 4 || res.Resumed {
		t.Fatalf("result = %+v", res)
	}
	for _, it := range res.Items {
		if it.Position == "" {
			t.Fatalf("item without position: %+v", it)
		}
	}

	moved := drainAll(t, c, queue, "work", 3*time.Second)
	if got := idsOf(t, moved); !slices.Equal(got, []string{"a1", "a2"}) {
		t.Fatalf("target received %v, want [a1 a2]", got)
	}
	for _, m := range moved {
		env, err := babelqueue.Decode(m.Payload())
		if err != nil {
			t.Fatal(err)
		}
		id := env.Meta.ID
		if m.Key() != "k-"+id || m.OrderingKey() != "o-"+id {
			t.Errorf("%s: key %q ordering key %q", id, m.Key(), m.OrderingKey())
		}
		p := m.Properties()
		if p["traceparent"] == "" || p[wire.HeaderRedriveCount] != "1" || p[wire.HeaderJob] != urnA ||
			!strings.Contains(p[wire.HeaderRedriveSource], "@") || p[wire.HeaderAttempts] != "0" {
			t.Errorf("%s: properties %v", id, p)
		}
		if env.DeadLetter != nil || env.Attempts != 0 {
			t.Errorf("%s: not cleared: %s", id, m.Payload())
		}
	}

	// The kept messages are still there, in order, for the next run.
	res, err = runRedrive(t, tr, dlq)
	if err != nil {
		t.Fatalf("second Redrive: %v", err)
	}
	if got := outcomes(res); !slices.Equal(got, []string{"b1=moved", "=undecodable"}) {
		t.Fatalf("second run outcomes = %v", got)
	}
	if got := idsOf(t, drainAll(t, c, queue, "work", 3*time.Second)); !slices.Equal(got, []string{"b1"}) {
		t.Fatalf("target received %v after the second run, want [b1]", got)
	}
}

func TestIntegrationRedriveDryRunLeavesEverything(t *testing.T) {
	c := rawClient(t)
	queue := uniqueQueue(t)
	dlq := DeadLetterQueue(queue)
	seedDLQ(t, c, dlq, queue, urnA, "d1", "d2", "d3")
	tr := newIntegrationTransport(t, WithSubscriptionType(pulsar.Shared))

	res, err := runRedrive(t, tr, dlq, redrive.WithDryRun(), redrive.WithMax(2))
	if err != nil {
		t.Fatalf("dry run: %v", err)
	}
	if got := outcomes(res); !slices.Equal(got, []string{"d1=would_move", "d2=would_move"}) {
		t.Fatalf("dry run outcomes = %v", got)
	}
	if got := drainAll(t, c, queue, "work", 2*time.Second); len(got) != 0 {
		t.Fatalf("a dry run wrote %d messages to the target", len(got))
	}
	res, err = runRedrive(t, tr, dlq)
	if err != nil {
		t.Fatalf("Redrive: %v", err)
	}
	if res.Moved != 3 {
		t.Fatalf("moved %d after the dry run, want 3: %v", res.Moved, outcomes(res))
	}
	if got := idsOf(t, drainAll(t, c, queue, "work", 3*time.Second)); !slices.Equal(got, []string{"d1", "d2", "d3"}) {
		t.Fatalf("target received %v", got)
	}
}

// TestIntegrationRedriveInterruptedIsResumed stops a run as a kill would:
// after the journal record and after the copies, before the dead letters
// were acknowledged. The next run completes it: every dead letter reaches
// the target exactly once and leaves the DLQ. In "consumed", the target's
// consumer acknowledges the copies of the interrupted run and the broker
// trims consumed ledgers before the next run: the guard subscription keeps
// the copies findable.
func TestIntegrationRedriveInterruptedIsResumed(t *testing.T) {
	for _, variant := range []string{"journaled", "sent", "consumed"} {
		t.Run(variant, func(t *testing.T) {
			stage := variant
			if variant == "consumed" {
				stage = "sent"
			}
			c := rawClient(t)
			queue := uniqueQueue(t)
			dlq := DeadLetterQueue(queue)
			ids := []string{"r1", "r2", "r3", "r4", "r5"}
			seedDLQ(t, c, dlq, queue, urnA, ids...)
			// A consumer of the target already subscribed: it must see
			// each copy once.
			work, err := c.Subscribe(pulsar.ConsumerOptions{Topic: queue, SubscriptionName: "work", Type: pulsar.Shared,
				SubscriptionInitialPosition: pulsar.SubscriptionPositionEarliest})
			if err != nil {
				t.Fatal(err)
			}
			work.Close()

			killed := newIntegrationTransport(t, WithSubscriptionType(pulsar.Shared))
			errKilled := errors.New("killed")
			killed.redriveFault = func(s string) error {
				if s == stage {
					return errKilled
				}
				return nil
			}
			res, err := runRedrive(t, killed, dlq, redrive.WithMax(3))
			if !errors.Is(err, errKilled) {
				t.Fatalf("interrupted run: err = %v, want the fault", err)
			}
			if res.Moved != 0 {
				t.Fatalf("interrupted run reports %d moved", res.Moved)
			}
			_ = killed.Close()
			if stage == "sent" && !slices.Contains(subscriptions(t, queue), guardSubscription(DefaultRedriveCursor)) {
				t.Fatalf("the interrupted run left no guard subscription on %s: %v", queue, subscriptions(t, queue))
			}

			var got []string
			if variant == "consumed" {
				got = idsOf(t, drainAll(t, c, queue, "work", 3*time.Second))
				if len(got) != 3 {
					t.Fatalf("the interrupted run wrote %v, want 3 copies", got)
				}
				admin(t, http.MethodPut, queue+"/unload")
				rawSend(t, c, queue, &pulsar.ProducerMessage{Payload: []byte("filler")}) // a new ledger
				if filler := drainAll(t, c, queue, "work", 3*time.Second); len(filler) != 1 {
					t.Fatalf("work read %d messages, want the filler", len(filler))
				}
				admin(t, http.MethodPost, queue+"/trim")
			}

			tr := newIntegrationTransport(t, WithSubscriptionType(pulsar.Shared))
			res, err = runRedrive(t, tr, dlq)
			if err != nil {
				t.Fatalf("resumed run: %v", err)
			}
			wantRecovered := 0
			if stage == "sent" {
				wantRecovered = 3
			}
			if !res.Resumed || res.Recovered != wantRecovered || res.Moved != len(ids)-wantRecovered {
				t.Fatalf("resumed run: %+v %v", res, outcomes(res))
			}
			got = append(got, idsOf(t, drainAll(t, c, queue, "work", 3*time.Second))...)
			slices.Sort(got)
			if !slices.Equal(got, ids) {
				t.Fatalf("target holds %v, want each of %v once", got, ids)
			}
			if subs := subscriptions(t, queue); slices.Contains(subs, guardSubscription(DefaultRedriveCursor)) {
				t.Fatalf("the guard subscription outlived the resumed run: %v", subs)
			}
			// The DLQ is empty for the cursor, and a later run has
			// nothing to recover.
			res, err = runRedrive(t, tr, dlq)
			if err != nil || res.Examined != 0 || res.Resumed {
				t.Fatalf("third run: %+v, %v", res, err)
			}
		})
	}
}

func TestIntegrationRedriveSecondConcurrentRunFails(t *testing.T) {
	c := rawClient(t)
	queue := uniqueQueue(t)
	dlq := DeadLetterQueue(queue)
	seedDLQ(t, c, dlq, queue, urnA, "c1")

	first := newIntegrationTransport(t, WithSubscriptionType(pulsar.Shared))
	entered, release := make(chan struct{}), make(chan struct{})
	first.redriveFault = func(s string) error {
		if s == "journaled" {
			close(entered)
			<-release
		}
		return nil
	}
	done := make(chan error, 1)
	go func() {
		_, err := runRedrive(t, first, dlq)
		done <- err
	}()
	select {
	case <-entered:
	case err := <-done:
		t.Fatalf("first run ended early: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("first run never reached its first move")
	}
	second := newIntegrationTransport(t, WithSubscriptionType(pulsar.Shared))
	_, err := runRedrive(t, second, dlq)
	close(release)
	if !errors.Is(err, ErrRedriveBusy) {
		t.Fatalf("second run: err = %v, want ErrRedriveBusy", err)
	}
	if err := <-done; err != nil {
		t.Fatalf("first run: %v", err)
	}
	if got := idsOf(t, drainAll(t, c, queue, "work", 3*time.Second)); !slices.Equal(got, []string{"c1"}) {
		t.Fatalf("target holds %v", got)
	}
}

func TestIntegrationRedriveGuardKeepsOftenRedriven(t *testing.T) {
	c := rawClient(t)
	queue := uniqueQueue(t)
	dlq := DeadLetterQueue(queue)
	p := rawProducer(t, c, dlq)
	for i, n := range []string{"3", "1"} {
		_, err := p.Send(context.Background(), &pulsar.ProducerMessage{
			Payload:    deadLetterBody(t, urnA, queue, fmt.Sprint("g", i)),
			Properties: map[string]string{wire.HeaderRedriveCount: n},
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	tr := newIntegrationTransport(t, WithSubscriptionType(pulsar.Shared))
	res, err := runRedrive(t, tr, dlq, redrive.WithMaxRedrives(3))
	if err != nil {
		t.Fatal(err)
	}
	if got := outcomes(res); !slices.Equal(got, []string{"g0=guarded", "g1=moved"}) {
		t.Fatalf("outcomes = %v", got)
	}
	moved := drainAll(t, c, queue, "work", 3*time.Second)
	if len(moved) != 1 || moved[0].Properties()[wire.HeaderRedriveCount] != "2" {
		t.Fatalf("target holds %v", idsOf(t, moved))
	}
	res, err = runRedrive(t, tr, dlq, redrive.WithMaxRedrives(3))
	if err != nil || !slices.Equal(outcomes(res), []string{"g0=guarded"}) {
		t.Fatalf("second run: %v, %v", outcomes(res), err)
	}
}

// TestIntegrationRedriveBatchEntryMovesWhole writes three dead letters in
// one broker batch entry: one that stays keeps the whole entry, and
// without it the whole entry moves.
func TestIntegrationRedriveBatchEntryMovesWhole(t *testing.T) {
	c := rawClient(t)
	queue := uniqueQueue(t)
	dlq := DeadLetterQueue(queue)
	p, err := c.CreateProducer(pulsar.ProducerOptions{Topic: dlq, BatchingMaxPublishDelay: 500 * time.Millisecond, BatchingMaxMessages: 3})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	errs := make(chan error, 3)
	for i, urn := range []string{urnA, urnB, urnA} {
		p.SendAsync(context.Background(), &pulsar.ProducerMessage{Payload: deadLetterBody(t, urn, queue, fmt.Sprint("e", i))},
			func(_ pulsar.MessageID, _ *pulsar.ProducerMessage, err error) { errs <- err })
	}
	for range 3 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	tr := newIntegrationTransport(t, WithSubscriptionType(pulsar.Shared))
	res, err := runRedrive(t, tr, dlq, redrive.WithSelector(redrive.SelectURN(urnA)))
	if err != nil {
		t.Fatal(err)
	}
	if got := outcomes(res); !slices.Equal(got, []string{"e0=unselected", "e1=unselected", "e2=unselected"}) {
		t.Fatalf("outcomes = %v", got)
	}
	if !errors.Is(res.Items[0].Err, ErrBatchEntryKept) {
		t.Fatalf("e0: err = %v, want ErrBatchEntryKept", res.Items[0].Err)
	}
	if got := drainAll(t, c, queue, "work", 2*time.Second); len(got) != 0 {
		t.Fatalf("target holds %v", idsOf(t, got))
	}
	res, err = runRedrive(t, tr, dlq)
	if err != nil || res.Moved != 3 {
		t.Fatalf("second run: %v, %v", outcomes(res), err)
	}
	if got := idsOf(t, drainAll(t, c, queue, "work", 3*time.Second)); !slices.Equal(got, []string{"e0", "e1", "e2"}) {
		t.Fatalf("target holds %v", got)
	}
}

// subscriptions lists the subscriptions of topic (public/default) through
// the admin API.
func subscriptions(t *testing.T, topic string) []string {
	t.Helper()
	resp, err := http.Get(brokertest.PulsarAdminURL(t) + "/admin/v2/persistent/public/default/" + topic + "/subscriptions")
	if err != nil {
		t.Fatalf("admin: %v", err)
	}
	defer resp.Body.Close()
	var subs []string
	if err := json.NewDecoder(resp.Body).Decode(&subs); err != nil {
		t.Fatalf("admin subscriptions of %s (%s): %v", topic, resp.Status, err)
	}
	return subs
}

// admin calls the admin API on path under persistent/public/default.
func admin(t *testing.T, method, path string) {
	t.Helper()
	req, err := http.NewRequest(method, brokertest.PulsarAdminURL(t)+"/admin/v2/persistent/public/default/"+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("admin %s %s: %v", method, path, err)
	}
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		t.Fatalf("admin %s %s: %s", method, path, resp.Status)
	}
}

// TestIntegrationRedriveInterruptedToPartitionedTarget is the "sent"
// interruption with a partitioned target: the copies spread over the
// partitions are all recognised.
func TestIntegrationRedriveInterruptedToPartitionedTarget(t *testing.T) {
	c := rawClient(t)
	queue := uniqueQueue(t)
	dlq := DeadLetterQueue(queue)
	target := queue + "-parted"
	brokertest.PulsarPartitionedTopic(t, target, 3)
	var ids []string
	for i := range 12 {
		ids = append(ids, fmt.Sprintf("p%02d", i))
	}
	seedDLQ(t, c, dlq, queue, urnA, ids...)
	if got := drainAll(t, c, target, "work", time.Second); len(got) != 0 {
		t.Fatalf("target not empty: %v", idsOf(t, got))
	}

	killed := newIntegrationTransport(t, WithSubscriptionType(pulsar.Shared))
	errKilled := errors.New("killed")
	killed.redriveFault = func(s string) error {
		if s == "sent" {
			return errKilled
		}
		return nil
	}
	if _, err := runRedrive(t, killed, dlq, redrive.WithTarget(target)); !errors.Is(err, errKilled) {
		t.Fatalf("interrupted run: %v", err)
	}
	_ = killed.Close()
	tr := newIntegrationTransport(t, WithSubscriptionType(pulsar.Shared))
	res, err := runRedrive(t, tr, dlq, redrive.WithTarget(target))
	if err != nil || res.Recovered != len(ids) || res.Moved != 0 {
		t.Fatalf("resumed run: %+v %v, %v", res, outcomes(res), err)
	}
	got := idsOf(t, drainAll(t, c, target, "work", 3*time.Second))
	slices.Sort(got)
	if !slices.Equal(got, ids) {
		t.Fatalf("target holds %v, want each of %v once", got, ids)
	}
}

// TestIntegrationRedriveRate moves 2000 dead letters, checks that each
// reached the target once, and prints the rate.
func TestIntegrationRedriveRate(t *testing.T) {
	const n = 2000
	c := rawClient(t)
	queue := uniqueQueue(t)
	dlq := DeadLetterQueue(queue)
	p := rawProducer(t, c, dlq)
	errs := make(chan error, n)
	for i := range n {
		id := fmt.Sprintf("m%04d", i)
		p.SendAsync(context.Background(), &pulsar.ProducerMessage{Payload: deadLetterBody(t, urnA, queue, id), Key: id},
			func(_ pulsar.MessageID, _ *pulsar.ProducerMessage, err error) { errs <- err })
	}
	for range n {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if got := drainAll(t, c, queue, "work", time.Second); len(got) != 0 {
		t.Fatalf("target not empty: %d", len(got))
	}
	tr := newIntegrationTransport(t, WithSubscriptionType(pulsar.Shared))
	start := time.Now()
	res, err := runRedrive(t, tr, dlq, redrive.WithPollTimeout(500*time.Millisecond))
	elapsed := time.Since(start) - 500*time.Millisecond // the final empty poll
	if err != nil || res.Moved != n {
		t.Fatalf("Redrive: moved %d, %v", res.Moved, err)
	}
	fmt.Printf("bench: pulsar-redrive-rate value=%.0f\n", float64(n)/elapsed.Seconds())
	got := idsOf(t, drainAll(t, c, queue, "work", 3*time.Second))
	seen := make(map[string]int, n)
	for _, id := range got {
		seen[id]++
	}
	if len(got) != n || len(seen) != n {
		t.Fatalf("target holds %d messages of %d ids, want %d", len(got), len(seen), n)
	}
}

// subscriptionBacklogs reads, through the admin API, the backlog of every
// subscription of topic (a persistent://tenant/namespace/name topic).
func subscriptionBacklogs(t *testing.T, topic string) map[string]int64 {
	t.Helper()
	path := strings.TrimPrefix(topic, "persistent://")
	if !strings.Contains(topic, "://") {
		path = "public/default/" + topic // how the broker resolves a bare name
	}
	resp, err := http.Get(brokertest.PulsarAdminURL(t) + "/admin/v2/persistent/" + path + "/stats")
	if err != nil {
		t.Fatalf("topic stats of %s: %v", topic, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("topic stats of %s: HTTP %d", topic, resp.StatusCode)
	}
	var stats struct {
		Subscriptions map[string]struct {
			MsgBacklog int64 `json:"msgBacklog"`
		} `json:"subscriptions"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&stats); err != nil {
		t.Fatalf("topic stats of %s: %v", topic, err)
	}
	out := make(map[string]int64, len(stats.Subscriptions))
	for name, s := range stats.Subscriptions {
		out[name] = s.MsgBacklog
	}
	return out
}

func TestIntegrationRedriveJournalIsRetainedAndTrimmed(t *testing.T) {
	c := rawClient(t)
	queue := uniqueQueue(t)
	dlq := DeadLetterQueue(queue)
	seedDLQ(t, c, dlq, queue, urnA, "a1", "a2")
	tr := newIntegrationTransport(t, WithSubscriptionType(pulsar.Shared))
	res, err := runRedrive(t, tr, dlq)
	if err != nil || res.Moved != 2 {
		t.Fatalf("Redrive: %v, %+v", err, res)
	}
	// A run with moves writes at least a batch record and a closing one.
	// The retain subscription keeps the journal (a topic without
	// subscriptions may be deleted once inactive) and, after a clean end,
	// holds only the closing record.
	journal := tr.Topic(dlq) + "." + DefaultRedriveCursor + RedriveJournalSuffix
	sub := DefaultRedriveCursor + ".retain"
	deadline := time.Now().Add(10 * time.Second)
	for {
		backlogs := subscriptionBacklogs(t, journal)
		n, ok := backlogs[sub]
		if ok && n == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("journal %s subscriptions %v: want %s with a backlog of 1", journal, backlogs, sub)
		}
		time.Sleep(200 * time.Millisecond)
	}
	// The next run still reads the closing record and finds nothing to do.
	res, err = runRedrive(t, tr, dlq)
	if err != nil || res.Examined != 0 || res.Resumed {
		t.Fatalf("second Redrive: %v, %+v", err, res)
	}
}

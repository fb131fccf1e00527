//go:build integration && restart

package pulsar

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	"github.com/babelqueue/babelqueue-go/brokertest"
	babelqueue "github.com/babelqueue/babelqueue-go/core"
)

// restartNamespace creates the namespace public/<name>, with broker-side
// deduplication when dedup is set.
func restartNamespace(t *testing.T, name string, dedup bool) {
	t.Helper()
	base := brokertest.PulsarAdminURL(t) + "/admin/v2/namespaces/public/" + name
	call := func(method, url, body string) {
		req, err := http.NewRequest(method, url, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("admin %s %s: %v", method, url, err)
		}
		resp.Body.Close()
		if resp.StatusCode/100 != 2 {
			t.Fatalf("admin %s %s: %s", method, url, resp.Status)
		}
	}
	call(http.MethodPut, base, "")
	if dedup {
		call(http.MethodPost, base+"/deduplication", "true")
	}
}

// restartSide is one App publishing through the broker restart.
type restartSide struct {
	name  string
	app   *babelqueue.App
	topic string
	seq   *atomic.Int64
	brokertest.Outcomes

	mu   sync.Mutex
	sent map[string]publishRecord // how each publish (by id) went
}

// publishRecord is one publish of the restart test, kept so a lost id can
// be placed against the broker kill and restart.
type publishRecord struct {
	n          int64
	start, end time.Time
	outcome    string // acked, unknown, refused
	err        string
}

// publish publishes one message and records its outcome.
func (s *restartSide) publish() {
	n := s.seq.Add(1)
	id := fmt.Sprintf("%s-%06d", s.name, n)
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	_, err := s.app.Publish(ctx, "urn:t:restart", map[string]int64{"n": n}, babelqueue.WithEnvelopeOptions(babelqueue.WithID(id)))
	cancel()
	unknown := errors.Is(err, babelqueue.ErrPublishUnknown)
	s.Add(id, err, unknown)
	rec := publishRecord{n: n, start: start, end: time.Now(), outcome: "acked"}
	switch {
	case unknown:
		rec.outcome = "unknown"
	case err != nil:
		rec.outcome = "refused"
	}
	if err != nil {
		rec.err = err.Error()
	}
	s.mu.Lock()
	s.sent[id] = rec
	s.mu.Unlock()
	time.Sleep(20 * time.Millisecond)
}

// account republishes every unknown outcome, trims the topic, reads it
// back and returns lost, duplicates, the refused ids stored and the ids
// republished.
func (s *restartSide) account(t *testing.T, c pulsar.Client, tl timeline) (lost, dups, refusedStored, republished int) {
	t.Helper()
	var again []string
	for _, err := range s.Unknown {
		var u *babelqueue.UnknownPublishError
		if !errors.As(err, &u) {
			t.Fatalf("%s: unknown outcome without *UnknownPublishError: %v", s.name, err)
		}
		for attempt := 0; ; attempt++ {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			_, rerr := s.app.Republish(ctx, err)
			cancel()
			if rerr == nil {
				break
			}
			if attempt == 10 {
				t.Fatalf("%s: republish %s: %v", s.name, u.ID, rerr)
			}
			if errors.Is(rerr, babelqueue.ErrPublishUnknown) {
				err = rerr
			}
		}
		again = append(again, u.ID)
	}
	trimTopic(t, s.topic)
	count, read := readBack(t, c, s.name, s.topic)
	t.Logf("%s: %s", s.name, read)
	lost, dups, refusedStored = s.Tally(count, again)
	if lost > 0 {
		var missing []string
		for id := range s.Acked {
			if count[id] == 0 {
				missing = append(missing, id)
			}
		}
		for _, id := range again {
			if count[id] == 0 {
				missing = append(missing, id)
			}
		}
		s.explainLoss(t, c, tl, missing)
	}
	return lost, dups, refusedStored, len(again)
}

// TestRestartDeduplication publishes through two Apps while the standalone
// is killed with -9 and started again: one with WithDeduplication on a
// namespace that deduplicates, one (the control) on a namespace that does
// not. Both keep queued messages however long the broker is away
// (SendTimeout disabled), so the only difference is deduplication.
// Publishes during the outage return unknown outcomes; after Republish of
// every one, the deduplicated topic holds each id exactly once, and the
// control shows the extra copies. Both topics are subscribed before the
// first publish and trimmed before the read-back (keepEverything,
// trimTopic): the broker deletes what no subscription keeps in every run,
// not only when its first retention check after the restart falls before
// the read-back, and the subscription must keep everything. Run by
// `make restart-tests` on a broker of its own.
func TestRestartDeduplication(t *testing.T) {
	var b [4]byte
	_, _ = rand.Read(b[:])
	suffix := hex.EncodeToString(b[:])
	nsDedup, nsControl := "restart-dedup-"+suffix, "restart-control-"+suffix
	restartNamespace(t, nsDedup, true)
	restartNamespace(t, nsControl, false)

	var seq atomic.Int64
	side := func(name, ns string, opts ...Option) *restartSide {
		tr := newIntegrationTransport(t, append([]Option{WithTopicPrefix("public", ns), WithSubscriptionType(pulsar.Shared)}, opts...)...)
		app, err := babelqueue.NewApp(tr, babelqueue.WithDefaultQueue("orders"))
		if err != nil {
			t.Fatal(err)
		}
		return &restartSide{name: name, app: app, topic: "persistent://public/" + ns + "/orders", seq: &seq, sent: map[string]publishRecord{}}
	}
	dedup := side("dedup", nsDedup, WithDeduplication("restart-test-"+suffix))
	control := side("control", nsControl, WithProducerOptions(func(o *pulsar.ProducerOptions) { o.SendTimeout = -1 }))
	c := rawClient(t)
	for _, s := range []*restartSide{dedup, control} {
		keepEverything(t, c, s.topic)
	}

	outage := brokertest.Outage{Broker: "pulsar", Before: 3 * time.Second, Down: 3 * time.Second, After: 5 * time.Second}
	down := outage.Run(t, dedup.publish, dedup.publish, control.publish, control.publish)
	// Run returns After after the broker served again, plus the wait for
	// the publishes under way (at most their 2 s bound): the times the
	// diagnostics place publishes against are that close.
	served := time.Now().Add(-outage.After)
	tl := timeline{killed: served.Add(-down), started: served}

	for _, s := range []*restartSide{dedup, control} {
		lost, dups, refusedStored, republished := s.account(t, c, tl)
		line := fmt.Sprintf("restart: broker=pulsar run=%s published=%d acked=%d unknown=%d refused=%d republished=%d lost=%d duplicates=%d refused_stored=%d",
			s.name, len(s.Acked)+len(s.Unknown)+len(s.Refused), len(s.Acked), len(s.Unknown), len(s.Refused), republished, lost, dups, refusedStored)
		fmt.Println(line)
		t.Logf("%s (broker down %s)", line, down.Round(100*time.Millisecond))
		if lost != 0 || refusedStored != 0 {
			t.Errorf("%s: lost=%d refused_stored=%d, want 0", s.name, lost, refusedStored)
		}
		if len(s.Unknown) == 0 {
			t.Errorf("%s: no publish returned an unknown outcome during the outage", s.name)
		}
		switch {
		case s == dedup && dups != 0:
			t.Errorf("dedup: %d duplicates, want every id stored once", dups)
		case s == control && dups == 0:
			t.Errorf("control: no duplicate after republishing %d unknown outcomes; the control shows nothing", len(s.Unknown))
		}
	}
}

// timeline is when the broker was killed and when it served again.
type timeline struct{ killed, started time.Time }

// at places t against the kill: seconds after it (negative before).
func (tl timeline) at(t time.Time) string {
	return fmt.Sprintf("%+.1fs", t.Sub(tl.killed).Seconds())
}

// readReport is how a read-back went, for the test log.
type readReport struct {
	messages int
	last     pulsar.MessageID // the broker's last message when the read began
	reached  bool
	took     time.Duration
	gap      time.Duration // longest wait for one message
	gapAt    int           // messages read before that wait
}

func (r readReport) String() string {
	return fmt.Sprintf("read back %d messages in %s up to the broker's last message %v (reached=%v); longest wait %s, after %d messages",
		r.messages, r.took.Round(time.Millisecond), r.last, r.reached, r.gap.Round(time.Millisecond), r.gapAt)
}

// readBackWait bounds the wait for one message while the topic still holds
// messages the reader has not reached: a broker that recovers its ledgers
// after a restart may stall a dispatch for seconds (a failed read is retried
// after dispatcherReadFailureBackoffInitialTimeInMs, 15 s by default).
const readBackWait = 90 * time.Second

// readBack reads topic from its earliest message up to the last message the
// broker reports when the read begins, and counts every meta.id read. A
// read that cannot reach that message within readBackWait per message fails
// the test: what was not read is not evidence of a loss. Messages after the
// last one (none are published by then) are drained for two seconds.
func readBack(t *testing.T, c pulsar.Client, name, topic string) (map[string]int, readReport) {
	t.Helper()
	r, err := c.CreateReader(pulsar.ReaderOptions{Topic: topic, StartMessageID: pulsar.EarliestMessageID()})
	if err != nil {
		t.Fatalf("%s: reader: %v", name, err)
	}
	defer r.Close()
	var rep readReport
	rep.last, err = r.GetLastMessageID()
	if err != nil {
		t.Fatalf("%s: last message id of %s: %v", name, topic, err)
	}
	count := map[string]int{}
	began := time.Now()
	rep.reached = rep.last.EntryID() < 0 // an empty topic
	prev := began
	for {
		wait := readBackWait
		if rep.reached {
			wait = 2 * time.Second
		}
		ctx, cancel := context.WithTimeout(context.Background(), wait)
		m, err := r.Next(ctx)
		cancel()
		if err != nil {
			if !rep.reached {
				rep.took = time.Since(began)
				t.Errorf("%s: read-back stopped after %d messages, before the broker's last message %v: %v", name, rep.messages, rep.last, err)
			}
			break
		}
		now := time.Now()
		if g := now.Sub(prev); g > rep.gap {
			rep.gap, rep.gapAt = g, rep.messages
		}
		prev = now
		rep.messages++
		env, err := babelqueue.Decode(m.Payload())
		if err != nil {
			t.Fatalf("%s: undecodable message %s: %v", name, m.ID(), err)
		}
		count[env.Meta.ID]++
		if !rep.reached && atOrAfter(m.ID(), rep.last) {
			rep.reached = true
			rep.took = time.Since(began)
		}
	}
	return count, rep
}

// atOrAfter reports whether m is at or after last in the topic's order. In
// the last entry, a batch index below zero (an entry that is not a batch,
// or an index the broker did not report) counts as reaching it.
func atOrAfter(m, last pulsar.MessageID) bool {
	switch {
	case m.LedgerID() != last.LedgerID():
		return m.LedgerID() > last.LedgerID()
	case m.EntryID() != last.EntryID():
		return m.EntryID() > last.EntryID()
	default:
		return m.BatchIdx() < 0 || last.BatchIdx() < 0 || m.BatchIdx() >= last.BatchIdx()
	}
}

// explainLoss logs what is known of the ids a read-back missed: how each
// was published against the kill and restart, a second read-back after a
// pause (a later read that finds them means the first read missed them),
// and the broker's view of the topic's ledgers.
func (s *restartSide) explainLoss(t *testing.T, c pulsar.Client, tl timeline, missing []string) {
	t.Helper()
	slices.SortFunc(missing, func(a, b string) int { return cmp.Compare(s.sent[a].n, s.sent[b].n) })
	byOutcome := map[string]int{}
	for _, id := range missing {
		byOutcome[s.sent[id].outcome]++
	}
	t.Logf("%s: %d ids missing (by publish outcome %v; the broker was killed at +0.0s and served again at %s)",
		s.name, len(missing), byOutcome, tl.at(tl.started))
	for i, id := range missing {
		if i == 40 {
			t.Logf("%s: ... %d more", s.name, len(missing)-i)
			break
		}
		rec := s.sent[id]
		t.Logf("%s: missing %s: publish %s..%s %s %s", s.name, id, tl.at(rec.start), tl.at(rec.end), rec.outcome, rec.err)
	}
	time.Sleep(20 * time.Second)
	again, rep := readBack(t, c, s.name+" (again)", s.topic)
	found := 0
	for _, id := range missing {
		if again[id] > 0 {
			found++
		}
	}
	t.Logf("%s: a second read-back 20s later found %d of the %d missing ids; %s", s.name, found, len(missing), rep)
	resp, err := http.Get(topicAdminURL(t, s.topic) + "/internalStats")
	if err != nil {
		t.Logf("%s: internal stats: %v", s.name, err)
		return
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 8<<10))
	t.Logf("%s: internal stats (%s): %s", s.name, resp.Status, body)
}

// topicAdminURL is the admin REST address of topic (persistent://t/ns/x).
func topicAdminURL(t *testing.T, topic string) string {
	return brokertest.PulsarAdminURL(t) + "/admin/v2/" + strings.Replace(topic, "://", "/", 1)
}

// keepEverything creates the durable subscription restart-keep on topic
// at its start, before anything is published, and leaves it unacknowledged.
// A topic keeps a message only for the subscriptions it has (or under a
// retention policy, which the test namespaces do not set): with none, the
// broker's retention check deletes every closed ledger, and a restart
// closes the ledger written before the kill. A deduplicated topic's only
// other durable cursor, pulsar.dedup, is moved to the last entry by the
// broker's deduplication snapshot, so it keeps nothing either. An App's
// consumers hold such a subscription; the test holds this one.
func keepEverything(t *testing.T, c pulsar.Client, topic string) {
	t.Helper()
	cons, err := c.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "restart-keep",
		Type: pulsar.Exclusive, SubscriptionInitialPosition: pulsar.SubscriptionPositionEarliest})
	if err != nil {
		t.Fatalf("subscribe restart-keep on %s: %v", topic, err)
	}
	cons.Close()
}

// trimTopic runs on topic the deletion of consumed ledgers the broker runs
// on its own every retentionCheckIntervalInSeconds (and a deduplicated
// topic at its deduplication snapshot), both first 120 s after the broker
// started. A read-back before that tick found everything even without a
// subscription; one after it, in a run whose restarted broker took long,
// lost everything published before the kill. Trimming before every
// read-back makes each run meet the broker's deletion.
func trimTopic(t *testing.T, topic string) {
	t.Helper()
	resp, err := http.Post(topicAdminURL(t, topic)+"/trim", "application/json", nil)
	if err != nil {
		t.Fatalf("trim %s: %v", topic, err)
	}
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		t.Fatalf("trim %s: %s", topic, resp.Status)
	}
}

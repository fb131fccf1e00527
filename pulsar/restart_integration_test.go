//go:build integration && restart

package pulsar

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"strings"
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
}

// publish publishes one message and records its outcome.
func (s *restartSide) publish() {
	n := s.seq.Add(1)
	id := fmt.Sprintf("%s-%06d", s.name, n)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	_, err := s.app.Publish(ctx, "urn:t:restart", map[string]int64{"n": n}, babelqueue.WithEnvelopeOptions(babelqueue.WithID(id)))
	cancel()
	s.Add(id, err, errors.Is(err, babelqueue.ErrPublishUnknown))
	time.Sleep(20 * time.Millisecond)
}

// account republishes every unknown outcome, reads the topic back and
// returns lost, duplicates, the refused ids stored and the ids republished.
func (s *restartSide) account(t *testing.T, c pulsar.Client) (lost, dups, refusedStored, republished int) {
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
	r, err := c.CreateReader(pulsar.ReaderOptions{Topic: s.topic, StartMessageID: pulsar.EarliestMessageID()})
	if err != nil {
		t.Fatalf("%s: reader: %v", s.name, err)
	}
	defer r.Close()
	count := map[string]int{}
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		m, err := r.Next(ctx)
		cancel()
		if err != nil {
			break
		}
		env, err := babelqueue.Decode(m.Payload())
		if err != nil {
			t.Fatalf("%s: undecodable message %s: %v", s.name, m.ID(), err)
		}
		count[env.Meta.ID]++
	}
	lost, dups, refusedStored = s.Tally(count, again)
	return lost, dups, refusedStored, len(again)
}

// TestRestartDeduplication publishes through two Apps while the standalone
// is killed with -9 and started again: one with WithDeduplication on a
// namespace that deduplicates, one (the control) on a namespace that does
// not. Both keep queued messages however long the broker is away
// (SendTimeout disabled), so the only difference is deduplication.
// Publishes during the outage return unknown outcomes; after Republish of
// every one, the deduplicated topic holds each id exactly once, and the
// control shows the extra copies. Run by `make restart-tests` on a broker of
// its own.
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
		return &restartSide{name: name, app: app, topic: "persistent://public/" + ns + "/orders", seq: &seq}
	}
	dedup := side("dedup", nsDedup, WithDeduplication("restart-test-"+suffix))
	control := side("control", nsControl, WithProducerOptions(func(o *pulsar.ProducerOptions) { o.SendTimeout = -1 }))

	outage := brokertest.Outage{Broker: "pulsar", Before: 3 * time.Second, Down: 3 * time.Second, After: 5 * time.Second}
	down := outage.Run(t, dedup.publish, dedup.publish, control.publish, control.publish)

	c := rawClient(t)
	for _, s := range []*restartSide{dedup, control} {
		lost, dups, refusedStored, republished := s.account(t, c)
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

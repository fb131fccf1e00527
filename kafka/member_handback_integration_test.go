//go:build integration

package kafka

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	babelqueue "github.com/babelqueue/babelqueue-go/core"
	"github.com/babelqueue/babelqueue-go/core/bqtest"
)

// TestIntegrationConcurrentAppStopKeepsTheRunningAck (issue 14), on the
// broker: a concurrent App stops while the handler of record 0 runs and
// records 1 and 2 wait in its partition's lane. They are handed back; the
// handler finishes within the settle timeout. Its Ack counts: nothing is
// logged at ERROR and the group's next member reads from record 1.
func TestIntegrationConcurrentAppStopKeepsTheRunningAck(t *testing.T) {
	for _, interval := range []time.Duration{0, 50 * time.Millisecond} {
		t.Run(fmt.Sprintf("commit-interval=%v", interval), func(t *testing.T) {
			topic, group := uniq("it-handback"), uniq("g")
			var logs bqtest.SyncBuffer
			logger := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn}))
			tr := itTransport(t, WithGroupID(group), WithCommitInterval(interval), WithLogger(logger))
			ensure(t, tr, topic, 1)
			ctx := bgCtx(t, 2*time.Minute)
			pub, err := babelqueue.NewApp(itTransport(t), quiet)
			if err != nil {
				t.Fatal(err)
			}
			for i := range 3 {
				if _, err := pub.Publish(ctx, "urn:it:handback", map[string]int{"n": i}, babelqueue.ToQueue(topic)); err != nil {
					t.Fatal(err)
				}
			}

			app, err := babelqueue.NewApp(tr, babelqueue.WithLogger(logger), babelqueue.WithPollTimeout(200*time.Millisecond),
				babelqueue.WithSettleTimeout(10*time.Second), babelqueue.WithConcurrency(2, babelqueue.OrderPartition),
				babelqueue.WithMaxPending(3))
			if err != nil {
				t.Fatal(err)
			}
			fb := newFirstCallBlocks()
			app.Handle("urn:it:handback", fb.handle)
			cctx, cancel := context.WithCancel(ctx)
			consumed := make(chan error, 1)
			go func() { consumed <- app.Consume(cctx, topic) }()
			select {
			case <-fb.started:
			case <-ctx.Done():
				t.Fatal("the first record was not handled")
			}
			stopWithWaitingHandedBack(t, tr.memberOf(topic), cancel)
			close(fb.release)
			if err := <-consumed; err != nil {
				t.Fatal(err)
			}
			if err := tr.Close(); err != nil {
				t.Fatal(err)
			}
			if out := logs.String(); strings.Contains(out, "level=ERROR") {
				t.Fatalf("an ERROR was logged:\n%s", out)
			}
			if n := fb.calls.Load(); n != 1 {
				t.Fatalf("handler ran %d times, want 1", n)
			}

			next := itTransport(t, WithGroupID(group))
			msg := popWithin(t, next, topic, 30*time.Second)
			if msg == nil {
				t.Fatal("nothing read again")
			}
			if msg.Offset != 1 {
				t.Fatalf("the group's next member read offset %d first, want 1", msg.Offset)
			}
			if err := next.Ack(ctx, msg); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// memberOf returns the group member reading queue (tests).
func (t *Transport) memberOf(queue string) *memberReader {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.readers[queue].member
}

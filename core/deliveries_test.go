package babelqueue

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/babelqueue/babelqueue-go/core/bqtest"
)

// TestLogsHooksAndDeadLettersCountDeliveriesAlike: issue 36 found three
// counts for one message (the handler's attempts 0-2, attempts=2 on the
// dead-letter log line, attempts 3 in the dead letter). The handler keeps
// the contract's attempts; every log line and the SettleHook say
// "deliveries", and the dead-letter line's count is the dead letter's
// attempts.
func TestLogsHooksAndDeadLettersCountDeliveriesAlike(t *testing.T) {
	var logs bqtest.SyncBuffer
	mem := bqtest.NewInMemoryTransport()
	hook := &deliveryCounts{}
	a := testApp(mem, WithMaxAttempts(3), WithHooks(hook),
		WithLogger(slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))))
	var seen []int
	a.Handle("urn:pay", func(_ context.Context, env *Envelope) error {
		seen = append(seen, env.Attempts)
		return errors.New("declined")
	})
	if err := mem.Publish(context.Background(), "orders", envBody(t, "urn:pay", 0)); err != nil {
		t.Fatal(err)
	}
	drain(t, a, "orders")

	if fmt.Sprint(seen) != "[0 1 2]" {
		t.Errorf("handler saw attempts %v, want [0 1 2]", seen)
	}
	if deliveries := hook.deliveries(); fmt.Sprint(deliveries) != "[1 2 3]" {
		t.Errorf("SettleHook deliveries %v, want [1 2 3]", deliveries)
	}
	out := logs.String()
	if regexp.MustCompile(`\battempts=`).MatchString(out) {
		t.Errorf("a log line still says attempts=:\n%s", out)
	}
	for _, want := range []string{
		`msg="babelqueue: handler failed" queue=orders urn=urn:pay message_id=`,
		"deliveries=1", "deliveries=2",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("logs lack %q:\n%s", want, out)
		}
	}
	dlLine := regexp.MustCompile(`msg="babelqueue: message dead-lettered".*`).FindString(out)
	dlq := mem.Messages("orders.dlq")
	if len(dlq) != 1 {
		t.Fatalf("DLQ holds %d", len(dlq))
	}
	if n := dlqEntry(t, dlq[0].Body).Attempts; n != 3 || !strings.Contains(dlLine, "deliveries=3") {
		t.Errorf("dead letter attempts %d, log line %q: want both 3", n, dlLine)
	}
}

// deliveryCounts is a SettleHook keeping each settlement's Deliveries.
type deliveryCounts struct {
	mu sync.Mutex
	n  []int
}

func (s *deliveryCounts) OnSettle(_ context.Context, _ *Delivery, st *Settlement) {
	s.mu.Lock()
	s.n = append(s.n, st.Deliveries)
	s.mu.Unlock()
}

func (s *deliveryCounts) deliveries() []int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]int(nil), s.n...)
}

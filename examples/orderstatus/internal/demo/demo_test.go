package demo

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/babelqueue/babelqueue-go/examples/orderstatus"
	"github.com/google/go-cmp/cmp"
)

// checkRun runs the demo against brokers (nil: embedded) and checks the
// report against the script's expectation and the records read back.
func checkRun(t *testing.T, brokers []string) {
	t.Helper()
	var out bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	r, err := Run(ctx, Config{Brokers: brokers, Out: &out, Log: slog.New(slog.DiscardHandler)})
	t.Logf("demo output:\n%s", out.String())
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	w := r.Want
	if r.Lost != 0 || r.Both != 0 {
		t.Errorf("lost %d (%v), both projected and dead-lettered %d", r.Lost, r.LostPlaces, r.Both)
	}
	if r.Produced != w.Produced || r.Projected != w.Projected || r.DeadLettered != w.DeadLettered {
		t.Errorf("accounted produced=%d projected=%d dead_lettered=%d, want %d %d %d",
			r.Produced, r.Projected, r.DeadLettered, w.Produced, w.Projected, w.DeadLettered)
	}
	statuses := map[string]orderstatus.Status{}
	for _, o := range r.Orders {
		statuses[o.ID] = o.Status
	}
	if diff := cmp.Diff(w.Statuses, statuses); diff != "" {
		t.Errorf("final statuses (-want +got):\n%s", diff)
	}

	byReason := map[string]int{}
	for _, m := range r.DeadLetters {
		reason, _ := orderstatus.Header(m.Headers, orderstatus.DLQHeaderReason)
		byReason[reason]++
		attempts, hasAttempts := orderstatus.Header(m.Headers, orderstatus.DLQHeaderAttempts)
		if reason == orderstatus.ReasonInvalidTransition || reason == orderstatus.ReasonUnavailable {
			if attempts != fmt.Sprint(demoAttempts) {
				t.Errorf("dead letter %s ran out of attempts but dlq.attempts = %q", m.Key, attempts)
			}
		} else if hasAttempts {
			t.Errorf("dead letter %s (%s) was given up on at once but has dlq.attempts %q", m.Key, reason, attempts)
		}
		for _, k := range []string{orderstatus.DLQHeaderError, orderstatus.DLQHeaderTopic, orderstatus.DLQHeaderPartition, orderstatus.DLQHeaderOffset} {
			if _, ok := orderstatus.Header(m.Headers, k); !ok {
				t.Errorf("dead letter %s has no %s header", m.Key, k)
			}
		}
	}
	if diff := cmp.Diff(w.DeadLetters, byReason); diff != "" {
		t.Errorf("dead letters by dlq.reason (-want +got):\n%s", diff)
	}
	counted := map[string]int{}
	for k, v := range r.DeadLetterCounts {
		counted[k] = int(v)
	}
	if diff := cmp.Diff(w.DeadLetters, counted); diff != "" {
		t.Errorf("orderstatus.dead_letters counter (-want +got):\n%s", diff)
	}
	var retries int64
	for _, v := range r.Retries {
		retries += v
	}
	if r.Retries[orderstatus.ReasonUnavailable] == 0 || r.Retries[orderstatus.ReasonInvalidTransition] == 0 {
		t.Errorf("retries by reason = %v, want both unavailable and invalid-transition", r.Retries)
	}
	if retries != int64(r.RetryRecords) {
		t.Errorf("orderstatus.retries counted %d, the retry topic holds %d processor records", retries, r.RetryRecords)
	}

	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	wantLast := fmt.Sprintf("accounted: produced=%d projected=%d dead_lettered=%d lost=0", w.Produced, w.Projected, w.DeadLettered)
	if last := lines[len(lines)-1]; last != wantLast {
		t.Errorf("last line %q, want %q", last, wantLast)
	}
}

func TestDemoOnEmbeddedBroker(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the whole demo (a few seconds)")
	}
	checkRun(t, nil)
}

package main

import (
	"context"
	"testing"
	"time"

	babelqueue "github.com/babelqueue/babelqueue-go/core"
	"github.com/babelqueue/babelqueue-go/core/bqtest"
	"github.com/babelqueue/babelqueue-go/core/driver"
	"github.com/babelqueue/babelqueue-go/core/redrive"
	"github.com/babelqueue/babelqueue-go/core/wire"
)

// The redrive runner over the in-memory transport (redrive.Run's
// generic run): selectors, dry run, the guard and the report.

func TestRedriveWithReport(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	tr := bqtest.NewInMemoryTransport()
	now := time.Now()
	for _, urn := range []string{"urn:a", "urn:a", "urn:b"} {
		if err := tr.Publish(ctx, "q.dlq", string(deadLetterBody(t, urn, "q", "failed", now))); err != nil {
			t.Fatal(err)
		}
	}
	if err := tr.Publish(ctx, "q.dlq", "not json"); err != nil {
		t.Fatal(err)
	}
	sel, err := (&selectorFlags{urns: "urn:a"}).build()
	if err != nil {
		t.Fatal(err)
	}
	var total, items int
	dry, err := redriveWith(ctx, tr, "q.dlq", "", redriveOptions{selector: sel, dryRun: true, onTotal: func(n int) { total = n }, onItem: func() { items++ }})
	if err != nil {
		t.Fatal(err)
	}
	if !dry.DryRun || dry.WouldMove != 2 || dry.Moved != 0 || dry.Examined != 4 || dry.Outcomes[outcomeWouldMove] != 2 || items != 4 || total != -1 || dry.Pending != -1 {
		t.Errorf("dry run report %+v (total %d, items %d)", dry, total, items)
	}
	rep, err := redriveWith(ctx, tr, "q.dlq", "", redriveOptions{selector: sel})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Moved != 2 || rep.Targets["q"] != 2 || rep.Outcomes[outcomeUnselected] != 1 || rep.Outcomes[outcomeUndecodable] != 1 || len(rep.Items) != 4 {
		t.Errorf("report %+v", rep)
	}
	moved := 0
	for {
		m, err := tr.Pop(ctx, "q", 10*time.Millisecond)
		if err != nil {
			t.Fatal(err)
		}
		if m == nil {
			break
		}
		env, err := babelqueue.Decode([]byte(m.Body))
		if err != nil || env.DeadLetter != nil || env.URN() != "urn:a" {
			t.Errorf("moved body %s (%v)", m.Body, err)
		}
		moved++
	}
	if moved != 2 {
		t.Errorf("q holds %d, want 2", moved)
	}
	again, err := redriveWith(ctx, tr, "q.dlq", "", redriveOptions{selector: sel})
	if err != nil || again.Moved != 0 || again.Examined != 2 {
		t.Errorf("second run %+v, %v; want 0 moved of the 2 that stay", again, err)
	}
}

func TestRedriveWithGuard(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	tr := bqtest.NewInMemoryTransport()
	now := time.Now()
	fresh := string(deadLetterBody(t, "urn:a", "q", "failed", now))
	tired := string(deadLetterBody(t, "urn:a", "q", "failed", now))
	if err := sendH(ctx, tr, "q.dlq", fresh, map[string]string{headerRedriveCount: "1", "traceparent": "00-t"}); err != nil {
		t.Fatal(err)
	}
	if err := sendH(ctx, tr, "q.dlq", tired, map[string]string{headerRedriveCount: "3"}); err != nil {
		t.Fatal(err)
	}
	rep, err := redriveWith(ctx, tr, "q.dlq", "", redriveOptions{maxRedrives: 3, bypass: true})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Moved != 1 || rep.Outcomes[outcomeGuarded] != 1 || len(rep.Guarded) != 1 || rep.Guarded[0].Count != 3 {
		t.Fatalf("report %+v", rep)
	}
	m, err := tr.Pop(ctx, "q", time.Second)
	if err != nil || m == nil {
		t.Fatalf("moved message: %v %v", m, err)
	}
	if m.Headers[headerRedriveCount] != "2" || m.Headers[wire.HeaderReplayBypass] != "true" || m.Headers["traceparent"] != "00-t" {
		t.Errorf("moved headers %v; want count 2, the bypass and the traceparent", m.Headers)
	}
	left, err := tr.Pop(ctx, "q.dlq", time.Second)
	if err != nil || left == nil || left.Headers[headerRedriveCount] != "3" {
		t.Fatalf("guarded message not kept with its count: %+v %v", left, err)
	}
}

func TestViewRedriveItem(t *testing.T) {
	v := viewRedriveItem(redrive.Item{Position: "2/41", MessageID: "m", Outcome: redrive.WouldMove, Redrives: 1})
	if v.Partition == nil || *v.Partition != 2 || v.Offset == nil || *v.Offset != 41 || v.Outcome != outcomeWouldMove || v.Count != 1 {
		t.Errorf("kafka position view %+v", v)
	}
	v = viewRedriveItem(redrive.Item{Position: "CAEQAw==", Outcome: redrive.Guarded})
	if v.Partition != nil || v.Offset != nil || v.Position != "CAEQAw==" || v.Outcome != outcomeGuarded {
		t.Errorf("pulsar position view %+v", v)
	}
}

// sendH publishes body with out-of-band headers on the in-memory transport.
func sendH(ctx context.Context, tr *bqtest.InMemoryTransport, queue, body string, headers map[string]string) error {
	_, err := tr.Send(ctx, &driver.Outgoing{Intent: driver.IntentPublish, Queue: queue, Body: body, Headers: headers})
	return err
}

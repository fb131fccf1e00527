package main

import (
	"context"
	"testing"
	"time"

	babelqueue "github.com/babelqueue/babelqueue-go/core"
)

func TestRedriveTransportReport(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	tr := babelqueue.NewInMemoryTransport()
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
	dry, err := redriveTransport(ctx, tr, "q.dlq", redriveOptions{selector: sel, dryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	if !dry.DryRun || dry.Moved != 2 || dry.Examined != 4 {
		t.Errorf("dry run report %+v", dry)
	}
	rep, err := redriveTransport(ctx, tr, "q.dlq", redriveOptions{selector: sel})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Moved != 2 || rep.Targets["q"] != 2 || rep.Outcomes[outcomeUnselected] != 1 || rep.Outcomes[outcomeUndecodable] != 1 {
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
	again, err := redriveTransport(ctx, tr, "q.dlq", redriveOptions{selector: sel})
	if err != nil || again.Moved != 0 || again.Examined != 2 {
		t.Errorf("second run %+v, %v; want 0 moved of the 2 that stay", again, err)
	}
}

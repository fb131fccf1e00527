package main

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/babelqueue/babelqueue-go/brokertest/devkafka"
	"github.com/babelqueue/babelqueue-go/core/bqtest"
	kafkago "github.com/segmentio/kafka-go"
)

// TestQuickstart runs the README's Quick start on the embedded broker:
// it creates its topics, handles the order it publishes, and returns nil
// soon after its context is cancelled.
func TestQuickstart(t *testing.T) {
	b, err := devkafka.Start()
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	var logs bqtest.SyncBuffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- run(ctx, strings.Join(b.Addrs(), ","), log) }()

	deadline := time.After(60 * time.Second)
	for !strings.Contains(logs.String(), `msg="order created" order_id=1042 retries_before=0`) {
		select {
		case err := <-done:
			t.Fatalf("run returned before handling the order: %v\n%s", err, logs.String())
		case <-deadline:
			t.Fatalf("the order was not handled within 60s:\n%s", logs.String())
		case <-time.After(50 * time.Millisecond):
		}
	}
	// The App and the re-injector consume in groups of their own.
	groups := map[string]bool{}
	for wait := time.Now().Add(30 * time.Second); (!groups["orders-workers"] || !groups["orders-workers.reinject"]) && time.Now().Before(wait); time.Sleep(100 * time.Millisecond) {
		res, err := (&kafkago.Client{Addr: kafkago.TCP(b.Addrs()...)}).ListGroups(ctx, &kafkago.ListGroupsRequest{})
		if err != nil {
			t.Fatal(err)
		}
		for _, g := range res.Groups {
			groups[g.GroupID] = true
		}
	}
	if !groups["orders-workers"] || !groups["orders-workers.reinject"] {
		t.Errorf("consumer groups %v, want orders-workers and orders-workers.reinject", groups)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("run after cancel: %v\n%s", err, logs.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("run did not stop within 30s of cancel:\n%s", logs.String())
	}
	if !strings.Contains(logs.String(), `msg=published id=`) {
		t.Errorf("no published line:\n%s", logs.String())
	}
}

package babelqueue

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/babelqueue/babelqueue-go/core/bqtest"
	"github.com/babelqueue/babelqueue-go/core/redrive"
	"github.com/babelqueue/babelqueue-go/core/wire"
)

// unreadableDeadLetters adds to orders.dlq, after two ordinary dead
// letters, a poison body and a schema_version 2 one (header and body).
func unreadableDeadLetters(t *testing.T, mem *bqtest.InMemoryTransport) (poison, v2 string) {
	t.Helper()
	deadLetters(t, mem, "urn:t:a", "urn:t:b")
	poison = "not json at all"
	v2 = `{"job":"urn:t:a","meta":{"schema_version":2},"attempts":0}`
	mem.PublishKeyed(context.Background(), "orders.dlq", []byte("pk"), poison, map[string]string{"x-trace": "p"})
	mem.PublishKeyed(context.Background(), "orders.dlq", nil, v2, map[string]string{wire.HeaderSchemaVersion: "2"})
	return poison, v2
}

func TestDiscardUnreadableDeadLetters(t *testing.T) {
	mem := bqtest.NewInMemoryTransport()
	poison, v2 := unreadableDeadLetters(t, mem)
	var seen []redrive.Item
	res, err := runRedrive(t, mem, redrive.WithDiscard(), redrive.WithUndecodable(), redrive.WithUnsupportedVersion(),
		redrive.WithSelector(redrive.SelectNone()), redrive.WithProgress(nil, func(it redrive.Item) { seen = append(seen, it) }))
	if err != nil {
		t.Fatalf("discard: %v", err)
	}
	want := []string{"unselected/restored", "unselected/restored", "discarded/removed", "discarded/removed"}
	if got := outcomes(res); !slices.Equal(got, want) || res.Discarded != 2 || res.Kept != 2 || res.Moved != 0 {
		t.Fatalf("outcomes %v, result %+v", got, res)
	}
	if mem.Len("orders") != 0 {
		t.Errorf("a discard wrote %d messages to the work queue", mem.Len("orders"))
	}
	left := mem.Messages("orders.dlq")
	if len(left) != 2 || mustDecode(t, left[0].Body).URN() != "urn:t:a" || mustDecode(t, left[1].Body).URN() != "urn:t:b" {
		t.Errorf("DLQ left %v, want the two envelopes", left)
	}
	if len(seen) != 4 || seen[2].Body != poison || string(seen[2].Key) != "pk" || seen[2].Headers["x-trace"] != "p" ||
		!errors.Is(seen[3].Err, wire.ErrUnsupportedSchemaVersion) || seen[3].Body != v2 {
		t.Errorf("the progress items do not carry the discarded letters: %+v", seen)
	}
	if seen[0].Body != "" {
		t.Errorf("a letter that stays carries its body: %+v", seen[0])
	}
}

func TestDiscardBySelectorAndOnlyOneKind(t *testing.T) {
	mem := bqtest.NewInMemoryTransport()
	unreadableDeadLetters(t, mem)
	// Only the poison one and urn:t:b: the v2 letter and urn:t:a stay.
	res, err := runRedrive(t, mem, redrive.WithDiscard(), redrive.WithUndecodable(), redrive.WithSelector(redrive.SelectURN("urn:t:b")))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"unselected/restored", "discarded/removed", "discarded/removed", "unsupported_version/restored"}
	if got := outcomes(res); !slices.Equal(got, want) || res.Discarded != 2 {
		t.Fatalf("outcomes %v, result %+v", got, res)
	}
	if res.Items[1].URN != "urn:t:b" || res.Items[1].Body == "" || mem.Len("orders.dlq") != 2 || mem.Len("orders") != 0 {
		t.Errorf("items %+v, dlq %d, orders %d", res.Items, mem.Len("orders.dlq"), mem.Len("orders"))
	}
}

func TestDiscardDryRunSaysWouldDiscard(t *testing.T) {
	mem := bqtest.NewInMemoryTransport()
	unreadableDeadLetters(t, mem)
	before := mem.Messages("orders.dlq")
	res, err := runRedrive(t, mem, redrive.WithDiscard(), redrive.WithDryRun(), redrive.WithUndecodable(), redrive.WithUnsupportedVersion())
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"would_discard/rewound", "would_discard/rewound", "would_discard/rewound", "would_discard/rewound"}
	if got := outcomes(res); !slices.Equal(got, want) || res.Discarded != 4 || !res.DryRun {
		t.Fatalf("outcomes %v, result %+v", got, res)
	}
	if after := mem.Messages("orders.dlq"); len(after) != len(before) || mem.Acked("orders.dlq") != 0 {
		t.Errorf("a dry discard changed the DLQ: %v", after)
	}
}

func TestDiscardMaxAndArguments(t *testing.T) {
	mem := bqtest.NewInMemoryTransport()
	deadLetters(t, mem, "urn:t:a", "urn:t:b", "urn:t:c")
	res, err := runRedrive(t, mem, redrive.WithDiscard(), redrive.WithMax(2))
	if err != nil || res.Discarded != 2 || res.Examined != 2 || mem.Len("orders.dlq") != 1 {
		t.Fatalf("max 2: %v %+v", err, res)
	}
	// Unreadable letters can only be discarded.
	for _, o := range []redrive.Option{redrive.WithUndecodable(), redrive.WithUnsupportedVersion()} {
		if _, err := runRedrive(t, mem, o); !errors.Is(err, ErrInvalidOption) {
			t.Errorf("a move run selecting unreadable letters: %v, want ErrInvalidOption", err)
		}
	}
	if mem.Len("orders.dlq") != 1 || mem.Len("orders") != 0 {
		t.Errorf("a rejected run touched the queues")
	}
}

package kafka

import (
	"testing"
	"time"

	"github.com/babelqueue/babelqueue-go/core/redrive"
)

// scenarioDiscard: a discard run between records that stay writes the
// kept ones back in order, writes the discarded ones nowhere, and leaves
// the cursor past all of them; the unreadable letters are discarded only
// when selected, and a last run empties the DLQ.
func scenarioDiscard(t *testing.T, e rdEnv) {
	ctx := rdCtx(t, 2*time.Minute)
	tr := e.transport(t)
	b := e.broker(t)
	work, dlq := e.topics(t, ctx, 1)
	v2 := `{"job":"urn:t:v2","meta":{"schema_version":2},"attempts":0}`
	e.seed(t, ctx, b, dlq, work,
		rdSeed{key: []byte("k0"), urn: "urn:t:keep"},
		rdSeed{key: []byte("d1"), urn: "urn:t:drop"},
		rdSeed{key: []byte("p2"), raw: []byte("{poison")},
		rdSeed{key: []byte("k3"), urn: "urn:t:keep"},
		rdSeed{key: []byte("v4"), raw: []byte(v2)},
		rdSeed{key: []byte("d5"), urn: "urn:t:drop"},
	)
	var discarded []redrive.Item
	progress := redrive.WithProgress(nil, func(it redrive.Item) {
		if it.Outcome == redrive.Discarded {
			discarded = append(discarded, it)
		}
	})
	res := runRedrive(t, ctx, tr, dlq, redrive.WithDiscard(), redrive.WithUndecodable(), redrive.WithSelector(redrive.SelectURN("urn:t:drop")), progress)
	o := outcomes(res)
	if res.Discarded != 3 || o[redrive.Unselected] != 2 || o[redrive.UnsupportedVersion] != 1 || res.Moved != 0 {
		t.Fatalf("discard: %+v %v", res, o)
	}
	if len(discarded) != 3 || string(discarded[0].Key) != "d1" || string(discarded[1].Key) != "p2" || discarded[1].Body != "{poison" ||
		discarded[0].Position != "0/1" || discarded[0].Disposition != redrive.DispositionRemoved {
		t.Errorf("discarded items: %+v", discarded)
	}
	if c := rdCursor(t, ctx, b, RedriveCursor(dlq), dlq); c[0] != 6 {
		t.Errorf("cursor at %d, want 6 (past every record read)", c[0])
	}
	live := rdLive(t, ctx, b, dlq)
	if len(live) != 3 || string(live[0].Key) != "k0" || string(live[1].Key) != "k3" || string(live[2].Key) != "v4" {
		t.Fatalf("live region: %d records %v", len(live), live)
	}
	if recs := rdRead(t, ctx, b, work, nil); len(recs) != 0 {
		t.Errorf("a discard wrote %d records to %s", len(recs), work)
	}
	// The version-gated one, by its own selector only.
	res = runRedrive(t, ctx, tr, dlq, redrive.WithDiscard(), redrive.WithUnsupportedVersion(), redrive.WithSelector(redrive.SelectNone()))
	if res.Discarded != 1 || res.Examined != 3 {
		t.Errorf("discard of the v2 letter: %+v", res)
	}
	res = runRedrive(t, ctx, tr, dlq, redrive.WithDiscard())
	if res.Discarded != 2 || len(rdLive(t, ctx, b, dlq)) != 0 {
		t.Errorf("last discard: %+v, live %d", res, len(rdLive(t, ctx, b, dlq)))
	}
}

func TestRedriveDiscard(t *testing.T) { scenarioDiscard(t, embEnv(t)) }

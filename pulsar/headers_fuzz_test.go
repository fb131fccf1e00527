package pulsar

import (
	"testing"

	"github.com/babelqueue/babelqueue-go/core/wire"
)

// FuzzPulsarHeaderReader feeds the attempts reconciliation of a received
// message (reconcileBody: its bq-attempts property and redelivery count)
// with arbitrary bodies, property values and counts. It may not panic;
// the body stays as received when there is no valid property and no
// redelivery, and a rewritten body carries the count of
// wire.ReconcilePulsar.
func FuzzPulsarHeaderReader(f *testing.F) {
	body := `{"job":"urn:a","trace_id":"t","data":{},"meta":{"id":"i","queue":"q","lang":"go","schema_version":1,"created_at":1},"attempts":2}`
	for _, s := range []struct {
		body, prop string
		present    bool
		redelivery int
	}{{body, "3", true, 0}, {body, "", false, 2}, {body, "x", true, 1}, {body, "2", true, 0}, {"not json", "1", true, 5},
		{`{"attempts":1}`, "4294967296", true, -1}, {body, "007", true, 2147483647}} {
		f.Add(s.body, s.prop, s.present, s.redelivery)
	}
	f.Fuzz(func(t *testing.T, body, prop string, present bool, redelivery int) {
		headers := map[string]string{"other": body}
		if present {
			headers[wire.HeaderAttempts] = prop
		}
		out := string(reconcileBody([]byte(body), headers, redelivery))
		_, valid := wire.ParseAttemptsHeader(prop)
		if redelivery <= 0 && (!present || !valid) && out != body {
			t.Fatalf("no valid bq-attempts and no redelivery changed the body:\n%s\n%s", body, out)
		}
		if out == body {
			return
		}
		before, ok := wire.BodyAttempts([]byte(body))
		if !ok {
			t.Fatalf("a body without readable attempts was rewritten:\n%s\n%s", body, out)
		}
		want := wire.ReconcilePulsar(before, prop, present, redelivery)
		if got, ok := wire.BodyAttempts([]byte(out)); !ok || got != want {
			t.Fatalf("rewritten body carries attempts %d (%v), want %d: %s", got, ok, want, out)
		}
	})
}

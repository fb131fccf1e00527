package kafka

import (
	"testing"

	kafkago "github.com/segmentio/kafka-go"

	"github.com/babelqueue/babelqueue-go/core/wire"
)

// FuzzKafkaHeaderReader feeds the readers of a delivered record's headers
// (headerMap, lastHeader, the attempts reconciliation of Pop) with
// arbitrary bodies and bq-attempts values, one or two of them. None may
// panic; the body changes only for a valid last bq-attempts value, and
// then carries that count.
func FuzzKafkaHeaderReader(f *testing.F) {
	body := `{"job":"urn:a","trace_id":"t","data":{},"meta":{"id":"i","queue":"q","lang":"go","schema_version":1,"created_at":1},"attempts":2}`
	for _, s := range [][3]string{{body, "3", ""}, {body, "2", ""}, {body, "x", "1"}, {body, "", ""}, {body, "007", "9"},
		{"not json", "1", ""}, {`{"attempts":1}`, "4294967296", ""}, {body, "2147483648", "1"}} {
		f.Add(s[0], s[1], s[2], true)
	}
	f.Add(body, "", "", false)
	f.Fuzz(func(t *testing.T, body, first, last string, twice bool) {
		hs := []kafkago.Header{{Key: wire.HeaderAttempts, Value: []byte(first)}}
		want := first
		if twice {
			hs = append(hs, kafkago.Header{Key: "other", Value: []byte(body)}, kafkago.Header{Key: wire.HeaderAttempts, Value: []byte(last)})
			want = last
		}
		if got, ok := lastHeader(hs, wire.HeaderAttempts); !ok || got != want {
			t.Fatalf("lastHeader = %q, %v; want %q", got, ok, want)
		}
		if m := headerMap(hs); m[wire.HeaderAttempts] != want {
			t.Fatalf("headerMap holds bq-attempts %q, want the last value %q", m[wire.HeaderAttempts], want)
		}
		out := reconcileBody(body, hs)
		n, valid := wire.ParseAttemptsHeader(want)
		if !valid {
			if out != body {
				t.Fatalf("invalid bq-attempts %q changed the body:\n%s\n%s", want, body, out)
			}
			return
		}
		if out != body {
			if got, ok := wire.BodyAttempts(out); !ok || got != n {
				t.Fatalf("reconciled body carries attempts %d (%v), want %d: %s", got, ok, n, out)
			}
		}
	})
}

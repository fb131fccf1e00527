package demo

import (
	"fmt"

	"github.com/segmentio/kafka-go"

	babelqueue "github.com/babelqueue/babelqueue-go/core"
	"github.com/babelqueue/babelqueue-go/core/wire"
	"github.com/babelqueue/babelqueue-go/examples/orderstatus"
)

// step is one record the demo publishes.
type step struct {
	topic   string // "" for the events topic; the retry topic for a forged record
	key     string
	value   []byte
	headers []kafka.Header
	note    string
}

// phase is a batch of steps published together; outage holds the store down
// while the phase starts (Config.OutageFor, and until every record of the
// phase has been refused once).
type phase struct {
	title  string
	steps  []step
	outage bool
}

// expectation is what the script predicts; the tests compare the run with it.
type expectation struct {
	Statuses     map[string]orderstatus.Status
	DeadLetters  map[string]int // by dlq.reason
	Produced     int
	Projected    int
	DeadLettered int
}

// event returns an order event envelope with its contract headers.
func event(orderID string, s orderstatus.Status) step {
	urn := orderstatus.URNFor(s)
	return envelopeStep(orderID, urn, map[string]any{"order_id": orderID}, string(s))
}

func envelopeStep(key, urn string, data map[string]any, note string) step {
	e, err := babelqueue.Make(urn, data, babelqueue.WithQueue("orders"))
	if err != nil {
		panic(fmt.Sprintf("demo: making %s: %v", urn, err)) // the script's own data; cannot fail
	}
	body, err := e.Encode()
	if err != nil {
		panic(fmt.Sprintf("demo: encoding %s: %v", urn, err))
	}
	var headers []kafka.Header
	for _, h := range wire.ProjectBody(body).Headers() {
		headers = append(headers, kafka.Header{Key: h.Key, Value: []byte(h.Value)})
	}
	return step{key: key, value: body, headers: headers, note: note}
}

func flow(orderID string, statuses ...orderstatus.Status) []step {
	var out []step
	for _, s := range statuses {
		out = append(out, event(orderID, s))
	}
	return out
}

// script returns the phases of the demo for the given retry topic, and what
// they should come to.
func script(retryTopic string) ([]phase, expectation) {
	const (
		created   = orderstatus.StatusCreated
		paid      = orderstatus.StatusPaid
		shipped   = orderstatus.StatusShipped
		delivered = orderstatus.StatusDelivered
		cancelled = orderstatus.StatusCancelled
	)
	var normal []step
	normal = append(normal, flow("A-1001", created, paid, shipped, delivered)...)
	normal = append(normal, flow("A-1002", created, paid, shipped, delivered)...)
	normal = append(normal, flow("A-1003", created, paid, cancelled)...)
	normal = append(normal, flow("A-1004", created, cancelled)...)
	duplicate := normal[0] // the same record sent twice, as a producer retry does
	duplicate.note = "duplicate of A-1001 created"
	normal = append(normal, duplicate)

	// Out of order: events that arrive before their predecessor succeed on a
	// later attempt.
	outOfOrder := append(flow("B-2001", paid, created, shipped, delivered),
		flow("B-2002", delivered, shipped, paid, created)...)

	notJSON := step{key: "M-3001", value: []byte("order M-3001 is paid"), note: "not JSON"}
	v2 := step{key: "M-3002", note: "schema_version 2",
		value: []byte(`{"job":"urn:babel:orders:created","trace_id":"` + wire.NewID() + `","data":{"order_id":"M-3002"},"meta":{"id":"` + wire.NewID() + `","queue":"orders","lang":"php","schema_version":2,"created_at":1764500000000},"attempts":0}`)}
	noOrder := envelopeStep("M-3003", orderstatus.URNCreated, map[string]any{"customer": "c-9"}, "no order_id")
	forged := event("M-3004", created)
	forged.topic = retryTopic
	forged.note = "retry record with a bad retry.attempt"
	forged.headers = append(forged.headers,
		kafka.Header{Key: orderstatus.HeaderAttempt, Value: []byte("soon")},
		kafka.Header{Key: orderstatus.HeaderPartition, Value: []byte("0")},
		kafka.Header{Key: orderstatus.HeaderOffset, Value: []byte("12")})
	unknown := envelopeStep("A-1002", "urn:babel:orders:refunded", map[string]any{"order_id": "A-1002"}, "unknown type")

	// Never valid: they run out of attempts.
	doomed := append([]step{event("C-4001", paid)}, flow("C-4002", created, cancelled, shipped)...)

	outage := append(flow("D-5001", created, paid), flow("D-5002", created, paid)...)
	outage = append(outage, flow("D-5003", created)...)

	phases := []phase{
		{title: "normal flows, a duplicate, out-of-order events, malformed and unknown records, records that run out of attempts",
			steps: concat(normal, outOfOrder, []step{notJSON, v2, noOrder, forged, unknown}, doomed)},
		{title: "a store outage: every attempt is unavailable until the store is back", steps: outage, outage: true},
	}
	want := expectation{
		Statuses: map[string]orderstatus.Status{
			"A-1001": delivered, "A-1002": delivered, "A-1003": cancelled, "A-1004": cancelled,
			"B-2001": delivered, "B-2002": delivered, "C-4002": cancelled,
			"D-5001": paid, "D-5002": paid, "D-5003": created,
		},
		DeadLetters: map[string]int{orderstatus.ReasonMalformed: 4, orderstatus.ReasonUnknownType: 1, orderstatus.ReasonInvalidTransition: 2},
	}
	for _, p := range phases {
		want.Produced += len(p.steps)
	}
	want.DeadLettered = 7
	want.Projected = want.Produced - want.DeadLettered
	return phases, want
}

func concat(parts ...[]step) []step {
	var out []step
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

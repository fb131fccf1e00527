package wire

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestOversizeBodyShape(t *testing.T) {
	e, x := "handler failed", "*errors.errorString"
	dl := DeadLetter{Reason: ReasonFailed, Error: &e, Exception: &x, FailedAt: 1700000000000, OriginalQueue: "orders", Attempts: 3}
	o := Oversize{URN: "urn:babel:orders:created", ID: "id-1", TraceID: "tr-1", Reason: ReasonPoison, WriteError: "refused",
		Size: 900000, RefusedSize: 1200123, Topic: "orders", Partition: 2, Offset: 42}
	want := `{"job":"urn:babel:orders:created","trace_id":"tr-1","meta":{"id":"id-1"},` +
		`"oversize":{"reason":"poison","write_error":"refused","size":900000,"refused_size":1200123,"topic":"orders","partition":2,"offset":42},` +
		`"dead_letter":{"reason":"oversize","error":"handler failed","exception":"*errors.errorString","failed_at":1700000000000,"original_queue":"orders","attempts":3,"lang":"go"}}`
	if got := string(OversizeBody(o, dl)); got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	// A Pulsar original is named by its message id; unknown ids are left out.
	o = Oversize{Reason: ReasonFailed, WriteError: "w", Size: 1, RefusedSize: 2, Topic: "persistent://public/default/orders", MessageID: "12:34:-1:0"}
	want = `{"oversize":{"reason":"failed","write_error":"w","size":1,"refused_size":2,"topic":"persistent://public/default/orders","message_id":"12:34:-1:0"},` +
		`"dead_letter":{"reason":"oversize","error":null,"exception":null,"failed_at":0,"original_queue":"","attempts":0,"lang":"go"}}`
	if got := string(OversizeBody(o, DeadLetter{})); got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	if _, err := Decode(OversizeBody(o, DeadLetter{})); err == nil {
		t.Error("a bounded dead letter must not decode as an envelope (a redrive would move it)")
	}
}

func TestOversizeBodyIsBounded(t *testing.T) {
	long := strings.Repeat("é", 5000) // 10,000 bytes
	o := Oversize{URN: long, ID: long, TraceID: long, Reason: long, WriteError: long, Topic: long, MessageID: long}
	dl := DeadLetter{Error: &long, Exception: &long, OriginalQueue: long}
	b := OversizeBody(o, dl)
	if len(b) > 10*(MaxOversizeText+16)+600 {
		t.Fatalf("bounded dead letter of %d bytes", len(b))
	}
	if !utf8.Valid(b) || !strings.Contains(string(b), "é…\"") {
		t.Errorf("a cut must end on a character boundary and be marked")
	}
	if got := bounded(long); len(got) > MaxOversizeText || !strings.HasSuffix(got, "…") {
		t.Errorf("bounded: %d bytes", len(got))
	}
}

package bqtest

import (
	"testing"

	"github.com/babelqueue/babelqueue-go/core/wire"
)

// TestDecodeBoundedLetterReadsOversizeBody round-trips wire.OversizeBody
// and checks the fields a test asserts on come back.
func TestDecodeBoundedLetterReadsOversizeBody(t *testing.T) {
	msg := "too large"
	body := wire.OversizeBody(wire.Oversize{URN: "urn:x", ID: "id-1", Reason: wire.ReasonPoison, WriteError: "refused",
		Size: 900, RefusedSize: 1300, Topic: "orders", Partition: 2, Offset: 7}, wire.DeadLetter{Error: &msg, OriginalQueue: "orders", Attempts: 1})
	b := DecodeBoundedLetter(t, body)
	o := b.Oversize
	if b.Job != "urn:x" || b.Meta.ID != "id-1" || o.Reason != wire.ReasonPoison || o.WriteError != "refused" || o.Size != 900 ||
		o.RefusedSize != 1300 || o.Topic != "orders" || o.Partition == nil || *o.Partition != 2 || o.Offset == nil || *o.Offset != 7 {
		t.Errorf("decoded %+v from %s", b, body)
	}
	if b.DeadLetter.Reason != wire.ReasonOversize || b.DeadLetter.Error == nil || *b.DeadLetter.Error != msg ||
		b.DeadLetter.OriginalQueue != "orders" || b.DeadLetter.Attempts != 1 || b.DeadLetter.Lang != "go" {
		t.Errorf("dead_letter %+v", b.DeadLetter)
	}
}

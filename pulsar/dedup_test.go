package pulsar

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	babelqueue "github.com/babelqueue/babelqueue-go/core"
	"github.com/babelqueue/babelqueue-go/core/wire"
)

// seqProducer answers SendAsync as the test says: inline (refused before
// queueing), later with an error or a receipt, or never.
type seqProducer struct {
	answer func(seq int64) (inline bool, never bool, err error)
	seqs   []int64
}

func (s *seqProducer) Send(context.Context, *pulsar.ProducerMessage) (pulsar.MessageID, error) {
	return nil, errors.New("not used")
}
func (s *seqProducer) Close()                {}
func (s *seqProducer) LastSequenceID() int64 { return 41 }
func (s *seqProducer) SendAsync(_ context.Context, msg *pulsar.ProducerMessage, cb func(pulsar.MessageID, *pulsar.ProducerMessage, error)) {
	seq := *msg.SequenceID
	s.seqs = append(s.seqs, seq)
	inline, never, err := s.answer(seq)
	switch {
	case never:
	case inline:
		cb(nil, msg, err)
	default:
		go func() { time.Sleep(time.Millisecond); cb(pulsar.EarliestMessageID(), msg, err) }()
	}
}

func msgOf(id string) *pulsar.ProducerMessage {
	return &pulsar.ProducerMessage{Payload: []byte("x"), Properties: map[string]string{wire.HeaderMessageID: id}}
}

func TestDedupProducerReusesTheSequenceOfAnUnknownOutcome(t *testing.T) {
	calls := 0
	fp := &seqProducer{answer: func(int64) (bool, bool, error) {
		calls++
		switch calls {
		case 1: // a: queued, the connection dropped
			return false, false, errors.New("connection closed")
		case 2: // b: refused before queueing
			return true, false, pulsar.ErrProducerClosed
		case 3: // c: queued, never answered before the deadline
			return false, true, nil
		}
		return false, false, nil
	}}
	d := newDedupProducer(fp, time.Unix(0, 100))
	ctx := context.Background()
	if _, err := d.Send(ctx, msgOf("a")); !errors.Is(err, babelqueue.ErrPublishUnknown) {
		t.Fatalf("a: %v, want unknown", err)
	}
	if _, err := d.Send(ctx, msgOf("b")); err == nil || errors.Is(err, babelqueue.ErrPublishUnknown) {
		t.Fatalf("b: %v, want a refusal", err)
	}
	short, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
	defer cancel()
	if _, err := d.Send(short, msgOf("c")); !errors.Is(err, babelqueue.ErrPublishUnknown) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("c: %v, want unknown", err)
	}
	for _, id := range []string{"d", "c", "a", "b", "a"} {
		if _, err := d.Send(ctx, msgOf(id)); err != nil {
			t.Fatalf("%s: %v", id, err)
		}
	}
	// a=100 (above LastSequenceID 41, from the clock), b=101, c=102, d=103;
	// c and a again with theirs; b (refused) gets a new one; a, settled, too.
	want := []int64{100, 101, 102, 103, 102, 100, 104, 105}
	if len(fp.seqs) != len(want) {
		t.Fatalf("sequences %v, want %v", fp.seqs, want)
	}
	for i := range want {
		if fp.seqs[i] != want[i] {
			t.Fatalf("sequences %v, want %v", fp.seqs, want)
		}
	}
	if len(d.unknown) != 0 || len(d.order) != 0 {
		t.Fatalf("unknown outcomes left: %v %v", d.unknown, d.order)
	}
}

func TestDedupProducerStartsAboveTheBrokersLastSequence(t *testing.T) {
	d := newDedupProducer(&seqProducer{}, time.Unix(0, 5))
	if d.next != 42 {
		t.Fatalf("next = %d, want LastSequenceID+1 = 42", d.next)
	}
}

func TestSendOutcomeUnknown(t *testing.T) {
	for err, want := range map[error]bool{
		pulsar.ErrSendTimeout:          true,
		context.DeadlineExceeded:       true,
		errors.New("connection reset"): true,
		pulsar.ErrContextExpired:       false,
		pulsar.ErrProducerClosed:       false,
		pulsar.ErrMessageTooLarge:      false,
		pulsar.ErrTopicNotfound:        false,
		pulsar.ErrSendQueueIsFull:      false,
	} {
		if got := sendOutcomeUnknown(err); got != want {
			t.Errorf("sendOutcomeUnknown(%v) = %v, want %v", err, got, want)
		}
	}
}

func TestRouteByKeyOrID(t *testing.T) {
	md := fixedPartitions(6)
	a := routeByKeyOrID(msgOf("id-1"), md)
	for range 5 {
		if routeByKeyOrID(msgOf("id-1"), md) != a {
			t.Fatal("one meta.id, two partitions")
		}
	}
	keyed := &pulsar.ProducerMessage{Key: "k", Properties: map[string]string{wire.HeaderMessageID: "id-1"}}
	if got, want := routeByKeyOrID(keyed, md), int(javaStringHash("k")%6); got != want {
		t.Fatalf("keyed message on %d, want its key's partition %d", got, want)
	}
}

type fixedPartitions uint32

func (f fixedPartitions) NumPartitions() uint32 { return uint32(f) }

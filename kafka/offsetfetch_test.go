package kafka

import (
	"context"
	"errors"
	"net"
	"slices"
	"testing"

	kafkago "github.com/segmentio/kafka-go"
	"github.com/segmentio/kafka-go/protocol"
	"github.com/segmentio/kafka-go/protocol/offsetfetch"
)

// offsetAnswers answers OffsetFetch requests with the error codes in
// codes, one per call, then with success (offset 7 of t/0).
type offsetAnswers struct {
	codes []int16
	calls int
}

func (o *offsetAnswers) RoundTrip(_ context.Context, _ net.Addr, _ protocol.Message) (protocol.Message, error) {
	o.calls++
	if len(o.codes) > 0 {
		c := o.codes[0]
		o.codes = o.codes[1:]
		return &offsetfetch.Response{ErrorCode: c}, nil
	}
	return &offsetfetch.Response{Topics: []offsetfetch.ResponseTopic{{Name: "t", Partitions: []offsetfetch.ResponsePartition{{PartitionIndex: 0, CommittedOffset: 7}}}}}, nil
}

func TestFetchOffsetsWaitsOutACoordinatorMoving(t *testing.T) {
	ctx := context.Background()
	req := &kafkago.OffsetFetchRequest{GroupID: "g", Topics: map[string][]int{"t": {0}}}
	fake := &offsetAnswers{codes: []int16{int16(kafkago.NotCoordinatorForGroup), int16(kafkago.GroupLoadInProgress)}}
	c := &kafkago.Client{Addr: kafkago.TCP("127.0.0.1:1"), Transport: fake}
	res, err := FetchOffsets(ctx, c, req)
	if err != nil || fake.calls != 3 || len(res.Topics["t"]) != 1 || res.Topics["t"][0].CommittedOffset != 7 {
		t.Fatalf("after two transient answers: %+v, %v, %d calls; want offset 7 in 3 calls", res, err, fake.calls)
	}

	// A lasting coordinator error is returned after a bounded number of
	// attempts; an error that is not transient at once.
	lasting := int16(kafkago.NotCoordinatorForGroup)
	fake = &offsetAnswers{codes: slices.Repeat([]int16{lasting}, brokerCallAttempts+3)}
	c.Transport = fake
	if _, err := FetchOffsets(ctx, c, req); !errors.Is(err, kafkago.NotCoordinatorForGroup) || fake.calls != brokerCallAttempts {
		t.Fatalf("a lasting coordinator error: %v after %d calls; want it after %d", err, fake.calls, brokerCallAttempts)
	}
	fake = &offsetAnswers{codes: []int16{int16(kafkago.GroupAuthorizationFailed)}}
	c.Transport = fake
	if _, err := FetchOffsets(ctx, c, req); !errors.Is(err, kafkago.GroupAuthorizationFailed) || fake.calls != 1 {
		t.Fatalf("an authorization error: %v after %d calls; want it after 1", err, fake.calls)
	}
}

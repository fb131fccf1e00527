package kafka

import "testing"

// TestFeaturesAckNonBlocking: Ack of a group member only marks the delivery
// settled when commits are periodic, so the App may call it without a
// settle deadline; with synchronous commits (interval 0) or an injected
// Reader, whose CommitMessages takes the context, it may not.
func TestFeaturesAckNonBlocking(t *testing.T) {
	for _, c := range []struct {
		name string
		opts []Option
		want bool
	}{
		{"members, periodic commits", nil, true},
		{"members, synchronous commits", []Option{WithCommitInterval(0)}, false},
		{"injected reader", []Option{WithReaderFactory(func(string) Reader { return nil })}, false},
	} {
		tr, err := New(append([]Option{WithBrokers("127.0.0.1:1"), WithGroupID("g")}, c.opts...)...)
		if err != nil {
			t.Fatal(err)
		}
		if got := tr.Features().AckNonBlocking; got != c.want {
			t.Errorf("%s: AckNonBlocking %v; want %v", c.name, got, c.want)
		}
		_ = tr.Close()
	}
}

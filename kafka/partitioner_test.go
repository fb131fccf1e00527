package kafka

import (
	"fmt"
	"testing"

	kafkago "github.com/segmentio/kafka-go"
)

// Vectors of the Java client's UtilsTest.testMurmur2 (signed int results).
func TestMurmur2MatchesJava(t *testing.T) {
	cases := []struct {
		key  []byte
		want int32
	}{
		{[]byte("21"), -973932308},
		{[]byte("foobar"), -790332482},
		{[]byte("a-little-bit-long-string"), -985981536},
		{[]byte("a-little-bit-longer-string"), -1486304829},
		{[]byte("lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8"), -58897971},
		{[]byte{'a', 'b', 'c'}, 479470107},
	}
	for _, c := range cases {
		if got := int32(murmur2(c.key)); got != c.want {
			t.Errorf("murmur2(%q) = %d, want %d", c.key, got, c.want)
		}
	}
}

// kafka-go's own Murmur2Balancer is a port of the same function; with
// Consistent set it must agree with ours on every key and partition count.
func TestMurmur2BalancerAgreesWithKafkaGo(t *testing.T) {
	ours := &Murmur2Balancer{}
	theirs := kafkago.Murmur2Balancer{Consistent: true}
	for n := 1; n <= 37; n += 3 {
		parts := make([]int, n)
		for i := range parts {
			parts[i] = i
		}
		for k := 0; k < 500; k++ {
			msg := kafkago.Message{Key: []byte(fmt.Sprintf("order-%d-%x", k, k*7919))}
			if a, b := ours.Balance(msg, parts...), theirs.Balance(msg, parts...); a != b {
				t.Fatalf("key %q over %d partitions: ours %d, kafka-go %d", msg.Key, n, a, b)
			}
		}
	}
}

func TestMurmur2BalancerEmptyKeyIsHashedNilKeySpreads(t *testing.T) {
	b := &Murmur2Balancer{}
	parts := []int{0, 1, 2, 3, 4, 5, 6, 7}
	want := PartitionForKey([]byte{}, len(parts))
	for i := 0; i < 10; i++ {
		if got := b.Balance(kafkago.Message{Key: []byte{}}, parts...); got != want {
			t.Fatalf("empty key went to %d then %d", want, got)
		}
	}
	seen := map[int]bool{}
	for i := 0; i < 16; i++ {
		seen[b.Balance(kafkago.Message{}, parts...)] = true
	}
	if len(seen) != len(parts) {
		t.Fatalf("nil keys used %d of %d partitions", len(seen), len(parts))
	}
}

package kafka

import (
	"sync/atomic"

	kafkago "github.com/segmentio/kafka-go"
)

// Murmur2Balancer is a kafkago.Balancer that places keyed records exactly
// as the Java client's default partitioner does, so Go and Java producers
// agree. The partition is (murmur2(key) & 0x7fffffff) % partitions. A
// record with a nil key has no partition affinity and is spread
// round-robin; an empty non-nil key is hashed like any other key, as in
// Java. It is safe for concurrent use.
type Murmur2Balancer struct {
	next atomic.Uint32
}

// Balance returns the partition of msg among partitions, which kafka-go
// passes in ascending order.
func (b *Murmur2Balancer) Balance(msg kafkago.Message, partitions ...int) int {
	if len(partitions) == 0 {
		return 0
	}
	if msg.Key == nil {
		return partitions[int(b.next.Add(1)-1)%len(partitions)]
	}
	return partitions[PartitionForKey(msg.Key, len(partitions))]
}

// PartitionForKey returns the partition, in [0, partitions), that the Java
// client's default partitioner picks for key. partitions must be positive.
func PartitionForKey(key []byte, partitions int) int {
	return int((murmur2(key) & 0x7fffffff) % uint32(partitions))
}

// murmur2 is the 32-bit MurmurHash2 variant of the Java client
// (org.apache.kafka.common.utils.Utils.murmur2), seed 0x9747b28c.
func murmur2(data []byte) uint32 {
	const (
		seed = 0x9747b28c
		m    = 0x5bd1e995
		r    = 24
	)
	n := len(data)
	h := uint32(seed) ^ uint32(n)
	i := 0
	for ; i+4 <= n; i += 4 {
		k := uint32(data[i]) | uint32(data[i+1])<<8 | uint32(data[i+2])<<16 | uint32(data[i+3])<<24
		k *= m
		k ^= k >> r
		k *= m
		h *= m
		h ^= k
	}
	switch n - i {
	case 3:
		h ^= uint32(data[i+2]) << 16
		fallthrough
	case 2:
		h ^= uint32(data[i+1]) << 8
		fallthrough
	case 1:
		h ^= uint32(data[i])
		h *= m
	}
	h ^= h >> 13
	h *= m
	h ^= h >> 15
	return h
}

package pulsar

import "github.com/apache/pulsar-client-go/pulsar"

// orderOf returns what the App orders concurrent handling of m by
// (babelqueue.WithConcurrency): its ordering key, else its key (nil when it
// has neither), and its partition index (0 on a non-partitioned topic).
func orderOf(m pulsar.Message) ([]byte, int32) {
	var key []byte
	if k := m.OrderingKey(); k != "" {
		key = []byte(k)
	} else if k := m.Key(); k != "" {
		key = []byte(k)
	}
	var part int32
	if id := m.ID(); id != nil {
		part = max(id.PartitionIdx(), 0)
	}
	return key, part
}

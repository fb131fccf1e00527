package pulsar

import (
	"unsafe"

	"github.com/apache/pulsar-client-go/pulsar"
)

// orderOf returns what the App orders concurrent handling of m by
// (babelqueue.WithConcurrency): its ordering key, else its key (nil when it
// has neither), and its partition index (0 on a non-partitioned topic).
// The key shares the bytes of m's key string rather than copying them on
// every delivery; like Body and Headers it must not be modified.
func orderOf(m pulsar.Message) ([]byte, int32) {
	var key []byte
	if k := m.OrderingKey(); k != "" {
		key = unsafe.Slice(unsafe.StringData(k), len(k))
	} else if k := m.Key(); k != "" {
		key = unsafe.Slice(unsafe.StringData(k), len(k))
	}
	var part int32
	if id := m.ID(); id != nil {
		part = max(id.PartitionIdx(), 0)
	}
	return key, part
}

package kafka

import (
	kafkago "github.com/segmentio/kafka-go"

	"github.com/babelqueue/babelqueue-go/core/wire"
)

// versionGate reports whether the record's bq-schema-version header rejects
// it (CONTRACT.md 6.7: present, not blank, not exactly the supported version). The
// body is not looked at. When it does, the OnSchemaVersionRejected hook is
// called with the header value; a panic in it is recovered and ignored.
func (t *Transport) versionGate(queue string, hs []kafkago.Header) (string, bool) {
	v, present := lastHeader(hs, wire.HeaderSchemaVersion)
	if wire.CheckSchemaVersionHeader(v, present) == nil {
		return "", false
	}
	if fn := t.cfg.onVersion; fn != nil {
		func() {
			defer func() {
				if p := recover(); p != nil {
					t.cfg.log().Warn("kafka: OnSchemaVersionRejected hook panicked", "panic", p, "queue", queue)
				}
			}()
			fn(v, queue)
		}()
	}
	return v, true
}

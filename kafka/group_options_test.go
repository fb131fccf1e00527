package kafka

import (
	"errors"
	"testing"
	"time"

	babelqueue "github.com/babelqueue/babelqueue-go/core"
	kafkago "github.com/segmentio/kafka-go"
)

func TestGroupOptionsDefaultsAndValidation(t *testing.T) {
	c := defaultConfig()
	if c.sessionTimeout != 10*time.Second || c.heartbeatInterval != time.Second || c.rebalanceTimeout != 15*time.Second ||
		c.revokeTimeout != 5*time.Second || c.startAt != StartEarliest || c.maxBufferedRecords != 1024 || c.maxBufferedBytes != 16<<20 {
		t.Fatalf("defaults: %+v", c)
	}
	if StartEarliest.offset() != kafkago.FirstOffset || StartLatest.offset() != kafkago.LastOffset {
		t.Fatal("start positions map onto the wrong kafka-go offsets")
	}
	for name, o := range map[string]Option{
		"session":   WithSessionTimeout(0),
		"heartbeat": WithHeartbeatInterval(-time.Second),
		"rebalance": WithRebalanceTimeout(0),
		"revoke":    WithRevokeTimeout(0),
		"start":     WithStartAt(StartAt(7)),
		"records":   WithMaxBufferedRecords(0),
		"bytes":     WithMaxBufferedBytes(-1),
	} {
		if _, err := New(WithBrokers("127.0.0.1:1"), o); !errors.Is(err, babelqueue.ErrInvalidOption) {
			t.Errorf("%s: New = %v, want ErrInvalidOption", name, err)
		}
	}
}

package kafka

import (
	"context"
	"fmt"
	"log/slog"
	"strings"

	kafkago "github.com/segmentio/kafka-go"
)

// partitionErrorLogger is the ErrorLogger of a member's partition readers.
// A fetch whose answer comes after the reader's deadline (a loaded host or
// broker: kafka-go allows its fetch wait plus a quarter, 62 ms at the
// 250 ms wait) ends in "i/o timeout"; kafka-go then reconnects and reads on
// from the same offset, so nothing is lost and nothing needs doing. Those
// lines go to Debug; every other line to Warn, as kafkaLogger does.
type partitionErrorLogger struct{ l *slog.Logger }

func (p partitionErrorLogger) Printf(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	if strings.HasSuffix(msg, "i/o timeout") {
		if p.l.Enabled(context.Background(), slog.LevelDebug) {
			p.l.Debug(msg, "component", "kafka-go")
		}
		return
	}
	p.l.Warn(msg, "component", "kafka-go")
}

var _ kafkago.Logger = partitionErrorLogger{}

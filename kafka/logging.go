package kafka

import (
	"fmt"
	"log/slog"
)

// kafkaLogger routes kafka-go's error log lines to slog at level Warn: the
// client retries most of what it logs, and the transport reports what it
// gives up on through its own errors.
type kafkaLogger struct{ l *slog.Logger }

func (k kafkaLogger) Printf(format string, args ...any) {
	k.l.Warn(fmt.Sprintf(format, args...), "component", "kafka-go")
}

// wrapf adds context to err, keeping it matchable with errors.Is.
func wrapf(err error, format string, args ...any) error {
	return fmt.Errorf("kafka: "+format+": %w", append(args, err)...)
}

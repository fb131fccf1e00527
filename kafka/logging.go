package kafka

import (
	"context"
	"fmt"
	"log/slog"
	"strings"

	kafkago "github.com/segmentio/kafka-go"
)

// kafkaLogger routes kafka-go's error log lines to slog at level Warn: the
// client retries most of what it logs, and the transport reports what it
// gives up on through its own errors.
type kafkaLogger struct{ l *slog.Logger }

func (k kafkaLogger) Printf(format string, args ...any) {
	k.l.Warn(fmt.Sprintf(format, args...), "component", "kafka-go")
}

// kafkaDebugLogger routes kafka-go's informational log lines (group joins,
// offsets looked up, writer batches) to slog at level Debug: they describe
// the client's normal work, one or more lines per fetch or rebalance. The
// message is formatted only when Debug is enabled.
type kafkaDebugLogger struct{ l *slog.Logger }

func (k kafkaDebugLogger) Printf(format string, args ...any) {
	if !k.l.Enabled(context.Background(), slog.LevelDebug) {
		return
	}
	k.l.Debug(fmt.Sprintf(format, args...), "component", "kafka-go")
}

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

// kafkaLoggers returns the Logger and ErrorLogger every kafka-go Reader,
// Writer and ConsumerGroup of a transport is configured with, so that
// none of kafka-go's lines bypass the transport's slog logger (WithLogger):
// informational lines at Debug, error lines at Warn, each with
// component=kafka-go.
func kafkaLoggers(l *slog.Logger) (logger, errorLogger kafkago.Logger) {
	return kafkaDebugLogger{l}, kafkaLogger{l}
}

// wrapf adds context to err, keeping it matchable with errors.Is.
func wrapf(err error, format string, args ...any) error {
	return fmt.Errorf("kafka: "+format+": %w", append(args, err)...)
}

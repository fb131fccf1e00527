package kafka

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
)

// TestKafkaLoggersGoThroughSlog: kafka-go's informational lines reach the
// transport's logger at Debug, its error lines at Warn, both marked as
// kafka-go's.
func TestKafkaLoggersGoThroughSlog(t *testing.T) {
	var buf bytes.Buffer
	l := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	logger, errorLogger := kafkaLoggers(l)
	logger.Printf("Joined group %s as member %s", "g", "m-1")
	errorLogger.Printf("Failed to join group %s: %v", "g", "boom")
	out := buf.String()
	for _, want := range []string{`level=DEBUG msg="Joined group g as member m-1" component=kafka-go`, `level=WARN msg="Failed to join group g: boom" component=kafka-go`} {
		if !strings.Contains(out, want) {
			t.Errorf("log output lacks %q:\n%s", want, out)
		}
	}

	buf.Reset()
	quiet, _ := kafkaLoggers(slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelInfo})))
	quiet.Printf("offset %d", 1)
	if buf.Len() != 0 {
		t.Errorf("a debug line was written at level Info: %s", buf.String())
	}
}

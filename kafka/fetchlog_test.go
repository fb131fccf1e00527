package kafka

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
)

func TestPartitionErrorLoggerQuietsFetchTimeouts(t *testing.T) {
	var buf bytes.Buffer
	l := partitionErrorLogger{slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelInfo}))}
	l.Printf("the kafka reader got an unknown error reading partition %d of %s at offset %d: %s", 0, "q", 3100, "read tcp 127.0.0.1:1->127.0.0.1:2: i/o timeout")
	if buf.Len() != 0 {
		t.Fatalf("a fetch timeout was logged above Debug: %s", buf.String())
	}
	l.Printf("failed to dial: %s", "connection refused")
	if !strings.Contains(buf.String(), "level=WARN") || !strings.Contains(buf.String(), "connection refused") {
		t.Fatalf("another error line was not logged at Warn: %q", buf.String())
	}
}

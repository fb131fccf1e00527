package main

import (
	"context"
	"errors"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/babelqueue/babelqueue-go/brokertest/devkafka"
	"github.com/babelqueue/babelqueue-go/examples/orderstatus"
)

func TestRunRefusesBadSettings(t *testing.T) {
	env := map[string]string{orderstatus.EnvRetryAttempts: "-1"}
	err := run(context.Background(), func(k string) string { return env[k] }, slog.New(slog.DiscardHandler))
	if !errors.Is(err, orderstatus.ErrInvalidSettings) {
		t.Fatalf("run = %v, want ErrInvalidSettings", err)
	}
	for _, sub := range []string{"KAFKA_BROKERS is not set", "RETRY_ATTEMPTS is -1"} {
		if !strings.Contains(err.Error(), sub) {
			t.Errorf("error %q does not say %q", err, sub)
		}
	}
}

func TestRunStopsGracefully(t *testing.T) {
	if testing.Short() {
		t.Skip("uses the embedded broker")
	}
	b, err := devkafka.Start()
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	env := map[string]string{
		orderstatus.EnvBrokers:   b.Addrs()[0],
		orderstatus.EnvStorePath: filepath.Join(t.TempDir(), "o.db"),
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := run(ctx, func(k string) string { return env[k] }, slog.New(slog.DiscardHandler)); err != nil {
		t.Fatalf("run after the context ended = %v, want nil (exit 0)", err)
	}
}

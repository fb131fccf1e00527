package devkafka

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"

	"github.com/twmb/franz-go/pkg/kfake"
)

// Broker is a running embedded broker. Its methods are safe for concurrent
// use.
type Broker struct {
	cluster *kfake.Cluster
	addrs   []string
	once    sync.Once
}

// Start starts a single-node broker listening on 127.0.0.1. The caller owns
// it and must Close it. Errors wrap ErrInvalidOption for a bad option;
// otherwise they come from listening (for example a port already in use).
func Start(opts ...Option) (*Broker, error) {
	cfg := defaults()
	for _, o := range opts {
		o(&cfg)
	}
	if err := errors.Join(cfg.errs...); err != nil {
		return nil, err
	}
	kopts := []kfake.Opt{
		kfake.Ports(cfg.port),
		kfake.ClusterID("babelqueue-dev"),
		kfake.AllowAutoTopicCreation(),
		kfake.DefaultNumPartitions(cfg.partitions),
	}
	for _, s := range cfg.topics {
		kopts = append(kopts, kfake.SeedTopics(int32(s.partitions), s.names...))
	}
	if cfg.logger != nil {
		kopts = append(kopts, kfake.WithLogger(slogBridge{cfg.logger}))
	}
	c, err := kfake.NewCluster(kopts...)
	if err != nil {
		return nil, fmt.Errorf("devkafka: start on 127.0.0.1:%d: %w", cfg.port, err)
	}
	return &Broker{cluster: c, addrs: c.ListenAddrs()}, nil
}

// Addrs returns the broker's host:port addresses (one, on 127.0.0.1), for
// a client's bootstrap list.
func (b *Broker) Addrs() []string {
	return append([]string(nil), b.addrs...)
}

// Close stops listening and drops all data. Calling it again does nothing.
func (b *Broker) Close() {
	b.once.Do(b.cluster.Close)
}

// slogBridge adapts an slog.Logger to kfake.Logger.
type slogBridge struct{ l *slog.Logger }

func (s slogBridge) Logf(level kfake.LogLevel, format string, args ...any) {
	var sl slog.Level
	switch level {
	case kfake.LogLevelError:
		sl = slog.LevelError
	case kfake.LogLevelWarn:
		sl = slog.LevelWarn
	case kfake.LogLevelInfo:
		sl = slog.LevelInfo
	case kfake.LogLevelDebug:
		sl = slog.LevelDebug
	default:
		return
	}
	ctx := context.Background()
	if !s.l.Enabled(ctx, sl) {
		return
	}
	s.l.Log(ctx, sl, fmt.Sprintf(format, args...), "component", "kfake")
}

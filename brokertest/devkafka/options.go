package devkafka

import (
	"errors"
	"fmt"
	"log/slog"
)

// ErrInvalidOption marks an option value Start refuses.
var ErrInvalidOption = errors.New("devkafka: invalid option")

// Defaults, in one place:
//
//	port:               0 (an ephemeral port chosen by the kernel)
//	default partitions: 1 (for topics created on first use)
//	seeded topics:      none
//	logger:             none (kfake's log lines are dropped)
type config struct {
	port       int
	partitions int
	topics     []seed
	logger     *slog.Logger
	errs       []error
}

type seed struct {
	partitions int
	names      []string
}

func defaults() config {
	return config{partitions: 1}
}

// Option configures Start.
type Option func(*config)

// WithPort makes the broker listen on 127.0.0.1:port; 0 picks a free port.
func WithPort(port int) Option {
	return func(c *config) {
		if port < 0 || port > 65535 {
			c.errs = append(c.errs, fmt.Errorf("%w: port %d out of range", ErrInvalidOption, port))
			return
		}
		c.port = port
	}
}

// WithDefaultPartitions sets the partition count of topics created on first
// use (by a producer's or consumer's metadata request, or a CreateTopics
// request asking for the default). It must be at least 1.
func WithDefaultPartitions(n int) Option {
	return func(c *config) {
		if n < 1 {
			c.errs = append(c.errs, fmt.Errorf("%w: default partitions %d, want >= 1", ErrInvalidOption, n))
			return
		}
		c.partitions = n
	}
}

// WithTopics creates the named topics at start, each with the given number
// of partitions (at least 1). It may be given several times.
func WithTopics(partitions int, names ...string) Option {
	return func(c *config) {
		if partitions < 1 {
			c.errs = append(c.errs, fmt.Errorf("%w: %d partitions for %v, want >= 1", ErrInvalidOption, partitions, names))
			return
		}
		for _, n := range names {
			if n == "" {
				c.errs = append(c.errs, fmt.Errorf("%w: empty topic name", ErrInvalidOption))
				return
			}
		}
		c.topics = append(c.topics, seed{partitions, append([]string(nil), names...)})
	}
}

// WithLogger sends the fake broker's log lines to l (kfake's error, warning,
// info and debug levels map to slog's). Nil drops them.
func WithLogger(l *slog.Logger) Option {
	return func(c *config) { c.logger = l }
}

package babelqueue

import "strconv"

// Ordering says which deliveries of one consumed queue an App with
// WithConcurrency above 1 handles one at a time, in the order received.
type Ordering uint8

const (
	// OrderKey handles the messages of one key one at a time, in order, and
	// different keys in parallel. Messages without a key
	// (ReceivedMessage.Key nil) run one at a time in the order of their
	// partition.
	OrderKey Ordering = iota
	// OrderPartition handles the messages of one partition one at a time,
	// in order; different partitions run in parallel.
	OrderPartition
	// OrderNone keeps no order: any message may run beside any other.
	OrderNone
)

var orderingNames = [...]string{"key", "partition", "none"}

// String names the ordering: key, partition or none.
func (o Ordering) String() string {
	if int(o) < len(orderingNames) {
		return orderingNames[o]
	}
	return "ordering(" + strconv.Itoa(int(o)) + ")"
}

// concurrencyConfig is the part of config WithConcurrency and
// WithMaxPending set.
type concurrencyConfig struct {
	workers    int      // handlers run at once per queue; 0 means 1
	order      Ordering // which deliveries stay in order
	maxPending int      // received but unfinished per queue; 0 means 4 × workers
}

// handlers returns how many handlers run at once per queue.
func (c concurrencyConfig) handlers() int { return max(c.workers, 1) }

// pending returns the bound of received but unfinished messages per queue.
func (c concurrencyConfig) pending() int {
	if c.maxPending > 0 {
		return c.maxPending
	}
	return 4 * c.handlers()
}

// WithConcurrency runs up to n handlers at once for each consumed queue; a
// slow message holds back only its lane, never the others.
//
// A lane is a key or a partition, as order says. Each delivery is settled
// (acknowledged, retried, dead-lettered, handed back) as soon as its
// handler returns, out of order; the binding commits only the settled
// prefix of a partition. A failed retry or dead-letter write hands the
// message back with the later messages of its lane and pauses that lane for
// the failure backoff; the other lanes go on. n must be at least 1 (1, the
// default, is the one-at-a-time loop) and order one of OrderKey,
// OrderPartition, OrderNone. core/DESIGN.md, "Concurrent handling",
// describes the rules.
func WithConcurrency(n int, order Ordering) Option {
	return func(c *config) {
		if n < 1 {
			c.fail("concurrency %d is below 1", n)
			return
		}
		if order > OrderNone {
			c.fail("unknown ordering %d", uint8(order))
			return
		}
		c.conc.workers, c.conc.order = n, order
	}
}

// WithMaxPending bounds the messages of one queue received but not yet
// settled (running, and waiting for their lane) when WithConcurrency is
// above 1. At the bound the queue stops receiving until one settles. The
// default is 4 × the concurrency; n must be at least 1.
func WithMaxPending(n int) Option {
	return func(c *config) {
		if n < 1 {
			c.fail("max pending %d is below 1", n)
			return
		}
		c.conc.maxPending = n
	}
}

package kafka

import (
	"time"

	kafkago "github.com/segmentio/kafka-go"
)

// StartAt is where a consumer group starts reading a partition it has no
// committed offset for (a new group, or offsets expired).
type StartAt int

const (
	// StartEarliest starts at the oldest record the topic still keeps. It
	// is the default: a group created after messages were published must
	// not skip them; a consumer deployed after its producer would
	// otherwise lose everything published before its first start.
	StartEarliest StartAt = iota
	// StartLatest starts after the last record: only what is published
	// after the group first joins is read.
	StartLatest
)

func (s StartAt) offset() int64 {
	if s == StartLatest {
		return kafkago.LastOffset
	}
	return kafkago.FirstOffset
}

// WithStartAt sets where a consumer group with no committed offset starts
// (default StartEarliest). A group with committed offsets always resumes
// from them. A Reinjector always starts at the earliest retry copy.
func WithStartAt(s StartAt) Option {
	return func(c *config) {
		if s != StartEarliest && s != StartLatest {
			c.fail("start at %d: use StartEarliest or StartLatest", s)
			return
		}
		c.startAt = s
	}
}

// WithSessionTimeout sets how long the group coordinator waits for a
// member's heartbeat before dropping it and handing its partitions to the
// others (default DefaultSessionTimeout, 10s). After a crash the group
// resumes within about this plus one rebalance. The broker bounds it
// (group.min/max.session.timeout.ms: 6s to 30min by default).
func WithSessionTimeout(d time.Duration) Option {
	return func(c *config) {
		if d <= 0 {
			c.fail("session timeout %v is not positive", d)
			return
		}
		c.sessionTimeout = d
	}
}

// WithHeartbeatInterval sets how often a member tells the coordinator it is
// alive (default DefaultHeartbeatInterval, 1s); a rebalance is noticed at
// the next heartbeat. Keep it well below the session timeout.
func WithHeartbeatInterval(d time.Duration) Option {
	return func(c *config) {
		if d <= 0 {
			c.fail("heartbeat interval %v is not positive", d)
			return
		}
		c.heartbeatInterval = d
	}
}

// WithRebalanceTimeout sets how long a rebalance waits for every member to
// rejoin (default DefaultRebalanceTimeout, 15s). A member revoking its
// partitions takes up to the revoke timeout plus a commit before it
// rejoins, so keep this above WithRevokeTimeout.
func WithRebalanceTimeout(d time.Duration) Option {
	return func(c *config) {
		if d <= 0 {
			c.fail("rebalance timeout %v is not positive", d)
			return
		}
		c.rebalanceTimeout = d
	}
}

// WithRevokeTimeout bounds how long the deliveries in flight of a revoked
// partition (a rebalance, or Close) may still settle before the settled
// prefix is committed and the rest left to the next owner (default
// DefaultRevokeTimeout, 5s). Acks after it fail with ErrRevoked (ErrClosed
// after Close) and commit nothing.
func WithRevokeTimeout(d time.Duration) Option {
	return func(c *config) {
		if d <= 0 {
			c.fail("revoke timeout %v is not positive", d)
			return
		}
		c.revokeTimeout = d
	}
}

// WithMaxBufferedRecords caps the records the transport holds across the
// queues it consumes: fetched and waiting for Receive, or handed out and
// not yet settled (default DefaultMaxBufferedRecords, 1024). Fetching
// pauses at the cap. Each partition's kafka-go reader decodes up to 64
// records more ahead.
func WithMaxBufferedRecords(n int) Option {
	return func(c *config) {
		if n <= 0 {
			c.fail("max buffered records %d is not positive", n)
			return
		}
		c.maxBufferedRecords = n
	}
}

// WithMaxBufferedBytes caps the bytes (keys, values and headers) of the
// records WithMaxBufferedRecords counts (default DefaultMaxBufferedBytes,
// 16 MiB). A record larger than the cap is taken only when nothing else is
// held.
func WithMaxBufferedBytes(n int64) Option {
	return func(c *config) {
		if n <= 0 {
			c.fail("max buffered bytes %d is not positive", n)
			return
		}
		c.maxBufferedBytes = n
	}
}

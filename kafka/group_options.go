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
	return positive("session timeout", d, func(c *config) *time.Duration { return &c.sessionTimeout })
}

// WithHeartbeatInterval sets how often a member tells the coordinator it is
// alive (default DefaultHeartbeatInterval, 1s); a rebalance is noticed at
// the next heartbeat. Keep it well below the session timeout.
func WithHeartbeatInterval(d time.Duration) Option {
	return positive("heartbeat interval", d, func(c *config) *time.Duration { return &c.heartbeatInterval })
}

// WithRebalanceTimeout sets how long a rebalance waits for every member to
// rejoin (default DefaultRebalanceTimeout, 15s). A member revoking its
// partitions takes up to the revoke timeout plus a commit before it
// rejoins, so keep this above WithRevokeTimeout.
func WithRebalanceTimeout(d time.Duration) Option {
	return positive("rebalance timeout", d, func(c *config) *time.Duration { return &c.rebalanceTimeout })
}

// WithRevokeTimeout bounds how long the deliveries in flight of a revoked
// partition may still settle before the settled prefix is committed. The
// rest is left to the next owner. A partition is revoked by a rebalance or
// Close; the default is DefaultRevokeTimeout, 5s. Acks after it fail with
// ErrRevoked (ErrClosed after Close) and commit nothing.
func WithRevokeTimeout(d time.Duration) Option {
	return positive("revoke timeout", d, func(c *config) *time.Duration { return &c.revokeTimeout })
}

// WithMaxBufferedRecords caps the records the transport holds across the
// queues it consumes, fetched and waiting for Receive or handed out and not
// yet settled. The default is DefaultMaxBufferedRecords, 1024. Fetching
// pauses at the cap. Each partition's kafka-go reader decodes up to 64
// records more ahead.
func WithMaxBufferedRecords(n int) Option {
	return positive("max buffered records", n, func(c *config) *int { return &c.maxBufferedRecords })
}

// WithMaxBufferedBytes caps the bytes of keys, values and headers of the
// records WithMaxBufferedRecords counts. The default is
// DefaultMaxBufferedBytes, 16 MiB. A record larger than the cap is taken
// only when nothing else is held.
func WithMaxBufferedBytes(n int64) Option {
	return positive("max buffered bytes", n, func(c *config) *int64 { return &c.maxBufferedBytes })
}

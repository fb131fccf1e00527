package kafka

import (
	"strconv"
	"time"
)

// RetryTopic returns the topic of the 1-based retry tier n of the work
// topic topic: "<topic>.retry.<n>".
func RetryTopic(topic string, n int) string {
	return topic + ".retry." + strconv.Itoa(n)
}

// TierForAttempt returns the 1-based tier a retry goes to when the record
// had attemptsBefore attempts, among tiers tiers (CONTRACT.md 6.5). It is
// min(attemptsBefore, tiers-1) + 1, so the last tier repeats once the tiers
// run out. A negative attemptsBefore counts as 0. It returns 0 when tiers
// is not positive.
func TierForAttempt(attemptsBefore, tiers int) int {
	if tiers <= 0 {
		return 0
	}
	if attemptsBefore < 0 {
		attemptsBefore = 0
	}
	return min(attemptsBefore, tiers-1) + 1
}

// tierForDelay returns the 1-based tier of the smallest tier that is at
// least delay, or 0 when none is. None is when the delay exceeds the
// largest tier or there are no tiers. tiers must be ascending.
func tierForDelay(delay time.Duration, tiers []time.Duration) int {
	for i, d := range tiers {
		if d >= delay {
			return i + 1
		}
	}
	return 0
}

// reinjectWait returns how long, at time now, a re-injector waits before
// carrying a record stamped ts of a tier of length tier. It waits until
// ts+tier, clamped to [0, tier], so an old record is carried at once and a
// future-dated one waits at most one tier.
func reinjectWait(ts time.Time, tier time.Duration, now time.Time) time.Duration {
	w := ts.Add(tier).Sub(now)
	if w < 0 {
		return 0
	}
	if w > tier {
		return tier
	}
	return w
}

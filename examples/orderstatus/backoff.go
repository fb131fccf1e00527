package orderstatus

import "time"

// Backoff returns how long a record on the given attempt (1 for the first
// retry) waits after its timestamp: MinDelay, doubled for each attempt after
// the first, never more than MaxDelay. Attempt 0 and below get MinDelay
// capped by MaxDelay, as the first retry does.
func (s Settings) Backoff(attempt int) time.Duration {
	d := s.MinDelay
	for i := 1; i < attempt && d > 0 && d < s.MaxDelay; i++ {
		d *= 2
	}
	return min(d, s.MaxDelay)
}

// RetryAt returns when a record stamped ts on the given attempt may be
// processed: its timestamp plus its backoff. A record of attempt 0 never waits.
func (s Settings) RetryAt(ts time.Time, attempt int) time.Time {
	if attempt <= 0 {
		return ts
	}
	return ts.Add(s.Backoff(attempt))
}

package wire

import "math"

// MaxAttemptsValue is the largest valid bq-attempts value.
const MaxAttemptsValue = math.MaxInt32

// ParseAttemptsHeader parses a raw bq-attempts value. It accepts only plain
// decimal digits with a value of at most MaxAttemptsValue; anything else (a
// sign, whitespace, the empty string, an out-of-range value) is invalid and
// reported as ok == false, which callers treat as an absent header.
func ParseAttemptsHeader(raw string) (n int, ok bool) {
	if raw == "" {
		return 0, false
	}
	v := 0
	for i := 0; i < len(raw); i++ {
		c := raw[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		v = v*10 + int(c-'0')
		if v > MaxAttemptsValue {
			return 0, false
		}
	}
	return v, true
}

// ReconcileKafka returns the attempts of a Kafka delivery: a valid
// bq-attempts header wins, even when lower than the body's count
// (CONTRACT.md 6). Otherwise the body's attempts stands. present reports
// whether the header was delivered at all.
func ReconcileKafka(bodyAttempts int, header string, present bool) int {
	if present {
		if n, ok := ParseAttemptsHeader(header); ok {
			return n
		}
	}
	return bodyAttempts
}

// ReconcilePulsar returns the attempts of a Pulsar delivery: the valid
// bq-attempts property when present, else the body's attempts, and at least
// redeliveryCount. redeliveryCount is 0-based, 0 on the first delivery
// (CONTRACT.md 5).
func ReconcilePulsar(bodyAttempts int, property string, present bool, redeliveryCount int) int {
	n := ReconcileKafka(bodyAttempts, property, present)
	if redeliveryCount > n {
		n = redeliveryCount
	}
	return n
}

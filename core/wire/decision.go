package wire

// Action is what the runtime does with a retryable outcome.
type Action int

const (
	// ActionRetry delivers the message again with attempts = Counted.
	ActionRetry Action = iota + 1
	// ActionDeadLetter writes the message to its dead-letter queue with
	// attempts = Counted.
	ActionDeadLetter
	// ActionDrop acknowledges the message and reports a warning; used when
	// attempts are exhausted and dead-lettering is off.
	ActionDrop
)

// String returns "retry", "dead_letter" or "drop".
func (a Action) String() string {
	switch a {
	case ActionRetry:
		return "retry"
	case ActionDeadLetter:
		return "dead_letter"
	case ActionDrop:
		return "drop"
	}
	return "unknown"
}

// Decision is the outcome of Decide.
type Decision struct {
	Action Action
	// Counted is reconciled attempts + 1: the deliveries so far, this one
	// included. It is the attempts value of the retried or dead-lettered copy.
	Counted int
}

// Decide applies the max-attempts rule to a retryable outcome: it retries
// while reconciled+1 < maxAttempts, and otherwise dead-letters, or drops
// when deadLetter is false. A maxAttempts below 1 is treated as 1 (no
// retry).
func Decide(reconciled, maxAttempts int, deadLetter bool) Decision {
	if maxAttempts < 1 {
		maxAttempts = 1
	}
	if reconciled < 0 {
		reconciled = 0
	}
	counted := reconciled + 1
	switch {
	case counted < maxAttempts:
		return Decision{Action: ActionRetry, Counted: counted}
	case deadLetter:
		return Decision{Action: ActionDeadLetter, Counted: counted}
	default:
		return Decision{Action: ActionDrop, Counted: counted}
	}
}

package wire

import (
	"fmt"
	"strconv"
)

// Dead-letter reasons (dead_letter.reason).
const (
	// ReasonFailed: the handler failed on the last allowed delivery.
	ReasonFailed = "failed"
	// ReasonUnknownURN: no handler is registered for the message URN.
	ReasonUnknownURN = "unknown_urn"
	// ReasonPoison: the body is not a conformant envelope (CONTRACT.md 4.2).
	ReasonPoison = "poison"
	// ReasonInvalidPayload: the App's payload validator rejected the data
	// (babelqueue.WithPayloadValidator); the message is dead-lettered at
	// once, never retried.
	ReasonInvalidPayload = "invalid_payload"
	// ReasonDecryptFailed: the protected fields of the data could not be
	// decrypted (babelqueue.WithFieldProtector): a wrong or deleted key, or
	// a tampered value. The message is retried, then dead-lettered; its
	// handler never runs on unreadable data.
	ReasonDecryptFailed = "decrypt_failed"
	// ReasonVersionGated is the Settlement.Reason of a message the version
	// gate rejected. It is never written as dead_letter.reason: such a
	// message goes to its dead-letter queue unchanged.
	ReasonVersionGated = "version_gated"
)

// DeadLetter is the dead_letter block of a dead-lettered message (CONTRACT.md 4.1).
// It is written with its keys in the order reason, error, exception,
// failed_at, original_queue, attempts, lang.
type DeadLetter struct {
	// Reason is ReasonFailed, ReasonUnknownURN, ReasonPoison,
	// ReasonInvalidPayload or ReasonDecryptFailed.
	Reason string
	// Error is the error text, or nil (written as null).
	Error *string
	// Exception is the Go type name of the error, or nil (written as null).
	Exception *string
	// FailedAt is when the message was dead-lettered, Unix milliseconds.
	FailedAt int64
	// OriginalQueue is the queue the message was consumed from.
	OriginalQueue string
	// Attempts is how many times the message was delivered before it was
	// dead-lettered, the last delivery included (equal to the body's
	// attempts).
	Attempts int
	// Lang is the dead-lettering SDK; an empty Lang is written as "go".
	Lang string
}

// isDeadLetterKey reports whether a dead_letter member is one DeadLetter
// knows; the others are kept as they are when the block is rewritten.
func isDeadLetterKey(b []byte, m member) bool {
	for _, k := range [...]string{"reason", "error", "exception", "failed_at", "original_queue", "attempts", "lang"} {
		if m.keyIs(b, k) {
			return true
		}
	}
	return false
}

// appendDeadLetter appends dl as a JSON object. When old holds a previous
// dead_letter object (a validated JSON object), its members that DeadLetter
// does not know are appended after the known keys, byte for byte (CONTRACT.md 2.2).
func appendDeadLetter(dst []byte, dl DeadLetter, old []byte) []byte {
	lang := dl.Lang
	if lang == "" {
		lang = Lang
	}
	dst = append(dst, `{"reason":`...)
	dst = appendJSONString(dst, dl.Reason)
	dst = append(dst, `,"error":`...)
	dst = appendNullableString(dst, dl.Error)
	dst = append(dst, `,"exception":`...)
	dst = appendNullableString(dst, dl.Exception)
	dst = append(dst, `,"failed_at":`...)
	dst = appendInt(dst, dl.FailedAt)
	dst = append(dst, `,"original_queue":`...)
	dst = appendJSONString(dst, dl.OriginalQueue)
	dst = append(dst, `,"attempts":`...)
	dst = appendInt(dst, int64(dl.Attempts))
	dst = append(dst, `,"lang":`...)
	dst = appendJSONString(dst, lang)
	if len(old) > 0 && old[0] == '{' {
		it := newObjIter(old, 0, 1)
		for {
			m, ok := it.next()
			if !ok {
				break
			}
			if !isDeadLetterKey(old, m) {
				dst = append(dst, ',')
				dst = append(dst, old[m.keyStart:m.valEnd]...)
			}
		}
	}
	return append(dst, '}')
}

// parseDeadLetter reads the known keys of the validated dead_letter object
// at b[open]. A key of the wrong type is left at its zero value.
func parseDeadLetter(b []byte, open int) *DeadLetter {
	dl := &DeadLetter{}
	it := newObjIter(b, open, 1)
	for {
		m, ok := it.next()
		if !ok {
			break
		}
		v := b[m.valStart:m.valEnd]
		switch {
		case m.keyIs(b, "reason"):
			dl.Reason = stringValue(v)
		case m.keyIs(b, "error"):
			dl.Error = nullableValue(v)
		case m.keyIs(b, "exception"):
			dl.Exception = nullableValue(v)
		case m.keyIs(b, "failed_at"):
			dl.FailedAt, _ = parseInt64(v)
		case m.keyIs(b, "original_queue"):
			dl.OriginalQueue = stringValue(v)
		case m.keyIs(b, "attempts"):
			dl.Attempts, _ = parseUint31(v)
		case m.keyIs(b, "lang"):
			dl.Lang = stringValue(v)
		}
	}
	return dl
}

// stringValue returns the value of a validated JSON value when it is a
// string, and "" otherwise.
func stringValue(v []byte) string {
	if len(v) == 0 || v[0] != '"' {
		return ""
	}
	s, _ := unquote(v, hasBackslash(v))
	return s
}

// nullableValue returns a pointer to the string value of v, or nil when v is
// null or not a string.
func nullableValue(v []byte) *string {
	if len(v) == 0 || v[0] != '"' {
		return nil
	}
	s, ok := unquote(v, hasBackslash(v))
	if !ok {
		return nil
	}
	return &s
}

func hasBackslash(v []byte) bool {
	for _, c := range v {
		if c == '\\' {
			return true
		}
	}
	return false
}

// DeadLetterOf reads the dead_letter block of body. It reports false when
// body is not a JSON object or has no dead_letter object.
func DeadLetterOf(body []byte) (*DeadLetter, bool) {
	l, err := locateTop(body, "dead_letter")
	if err != nil || !l.found || body[l.m.valStart] != '{' {
		return nil, false
	}
	return parseDeadLetter(body, l.m.valStart), true
}

// AnnotateDeadLetter returns a copy of body for the dead-letter queue,
// changing only attempts and the dead_letter block (CONTRACT.md 4.1).
// attempts is set to dl.Attempts and a dead_letter block is added, or the
// existing one replaced in place, its unknown keys kept after the known
// ones. A missing attempts key or dead_letter block is inserted after the
// last member, in that order. body must be a JSON object (else the error
// wraps ErrPoison); a dl.Attempts outside [0, MaxAttemptsValue] is rejected
// with ErrInvalidEnvelope.
func AnnotateDeadLetter(body []byte, dl DeadLetter) ([]byte, error) {
	b, err := SetAttempts(body, dl.Attempts)
	if err != nil {
		return nil, fmt.Errorf("babelqueue: annotating dead letter: %w", err)
	}
	return setDeadLetterBlock(b, dl)
}

// setDeadLetterBlock adds or replaces the dead_letter block of the JSON
// object b.
func setDeadLetterBlock(b []byte, dl DeadLetter) ([]byte, error) {
	l, err := locateTop(b, "dead_letter")
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrPoison, err)
	}
	var old []byte
	if l.found {
		old = b[l.m.valStart:l.m.valEnd]
	}
	block := appendDeadLetter(make([]byte, 0, 160), dl, old)
	return withMember(b, l, "dead_letter", block), nil
}

// ClearDeadLetter returns a copy of body for a redrive, with the
// dead_letter block removed and attempts set to 0 (CONTRACT.md 8). A
// missing attempts is added after the last member. Every other byte is
// unchanged; removing a block that AnnotateDeadLetter appended restores the
// bytes before it. body must be a JSON object, else the error wraps
// ErrPoison.
func ClearDeadLetter(body []byte) ([]byte, error) {
	l, err := locateTop(body, "dead_letter")
	if err != nil {
		return nil, fmt.Errorf("babelqueue: clearing dead letter: %w: %w", ErrPoison, err)
	}
	return SetAttempts(withoutMember(body, l), 0)
}

// SetAttempts returns a copy of body with the top-level attempts value set
// to n (CONTRACT.md 2.4): only the bytes of that value change. When body has no
// attempts key, `"attempts":n` is inserted after the last member. When the
// key is repeated, the last occurrence (the one JSON readers keep) changes.
// body must be a JSON object (else the error wraps ErrPoison); n must be in
// [0, MaxAttemptsValue] (else ErrInvalidEnvelope).
func SetAttempts(body []byte, n int) ([]byte, error) {
	if n < 0 || n > MaxAttemptsValue {
		return nil, fmt.Errorf("%w: attempts %d is out of range [0, %d]", ErrInvalidEnvelope, n, MaxAttemptsValue)
	}
	l, err := locateTop(body, "attempts")
	if err != nil {
		return nil, fmt.Errorf("babelqueue: setting attempts: %w: %w", ErrPoison, err)
	}
	var num [20]byte
	return withMember(body, l, "attempts", strconv.AppendInt(num[:0], int64(n), 10)), nil
}

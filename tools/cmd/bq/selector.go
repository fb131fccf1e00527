package main

import (
	"fmt"
	"github.com/spf13/pflag"
	"strings"
	"time"

	babelqueue "github.com/babelqueue/babelqueue-go/core"
	"github.com/babelqueue/babelqueue-go/core/wire"
)

// selectorFlags are the dead-letter filters shared by peek and redrive.
type selectorFlags struct {
	urns    string
	reasons string
	since   string
	until   string
}

func (s *selectorFlags) register(fs *pflag.FlagSet) {
	fs.StringVarP(&s.urns, "urn", "u", "", "only these URNs (comma-separated)")
	fs.StringVarP(&s.reasons, "reason", "r", "", "only these dead-letter reasons (comma-separated: failed, unknown_urn, poison, none)")
	fs.StringVar(&s.since, "since", "", "only dead letters failed at or after this time (RFC 3339, or a duration ago such as 24h)")
	fs.StringVar(&s.until, "until", "", "only dead letters failed before this time (RFC 3339, or a duration ago)")
}

// selector decides which dead letters a command acts on. The zero value
// selects everything.
type selector struct {
	// none declines every decodable dead letter (a discard of only
	// --poison or --unsupported-version letters).
	none    bool
	urns    map[string]bool
	reasons map[string]bool
	since   time.Time
	until   time.Time
}

// parseWhen reads an RFC 3339 time or a duration before now.
func parseWhen(s string, now time.Time) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, nil
	}
	if d, err := time.ParseDuration(s); err == nil {
		if d < 0 {
			return time.Time{}, fmt.Errorf("%q: a duration ago must be positive", s)
		}
		return now.Add(-d), nil
	}
	return time.Time{}, fmt.Errorf("%q: want an RFC 3339 time (2006-01-02T15:04:05Z) or a duration such as 24h", s)
}

func splitSet(s string) map[string]bool {
	if strings.TrimSpace(s) == "" {
		return nil
	}
	m := map[string]bool{}
	for _, v := range strings.Split(s, ",") {
		if v = strings.TrimSpace(v); v != "" {
			m[v] = true
		}
	}
	return m
}

// build validates the flags into a selector (times relative to now).
func (s *selectorFlags) build() (selector, error) {
	return s.buildAt(time.Now())
}

func (s *selectorFlags) buildAt(now time.Time) (selector, error) {
	sel := selector{urns: splitSet(s.urns), reasons: splitSet(s.reasons)}
	for r := range sel.reasons {
		switch r {
		case wire.ReasonFailed, wire.ReasonUnknownURN, wire.ReasonPoison, "none":
		default:
			return sel, fmt.Errorf("--reason %q: want failed, unknown_urn, poison or none", r)
		}
	}
	var err error
	if s.since != "" {
		if sel.since, err = parseWhen(s.since, now); err != nil {
			return sel, fmt.Errorf("--since %w", err)
		}
	}
	if s.until != "" {
		if sel.until, err = parseWhen(s.until, now); err != nil {
			return sel, fmt.Errorf("--until %w", err)
		}
	}
	if !sel.since.IsZero() && !sel.until.IsZero() && !sel.since.Before(sel.until) {
		return sel, fmt.Errorf("--since %s is not before --until %s", sel.since.Format(time.RFC3339), sel.until.Format(time.RFC3339))
	}
	return sel, nil
}

// match reports whether a dead letter with this URN ("" when undecodable),
// dead_letter block (nil for a version-gated record) and failure time is
// selected.
func (s selector) match(urn string, dl *wire.DeadLetter, failedAt time.Time) bool {
	if s.urns != nil && !s.urns[urn] {
		return false
	}
	if s.reasons != nil {
		reason := "none"
		if dl != nil {
			reason = dl.Reason
		}
		if !s.reasons[reason] {
			return false
		}
	}
	if !s.since.IsZero() && failedAt.Before(s.since) {
		return false
	}
	if !s.until.IsZero() && !failedAt.Before(s.until) {
		return false
	}
	return true
}

// matchRecord applies the selector to a record: the failure time is
// dead_letter.failed_at, else the record time.
func (s selector) matchRecord(r *record) bool {
	urn := ""
	if env, err := babelqueue.Decode(r.Value); err == nil {
		urn = env.URN()
	}
	dl, _ := wire.DeadLetterOf(r.Value)
	return s.match(urn, dl, failedAt(dl, r.Time))
}

// failedAt is the failure time of a dead letter.
func failedAt(dl *wire.DeadLetter, recordTime time.Time) time.Time {
	if dl != nil && dl.FailedAt > 0 {
		return time.UnixMilli(dl.FailedAt)
	}
	return recordTime
}

// matchEnvelope applies the selector to a decoded dead letter: the
// failure time is dead_letter.failed_at, else meta.created_at, else now.
func (s selector) matchEnvelope(env *babelqueue.Envelope) bool {
	if s.none {
		return false
	}
	at := time.Now()
	switch {
	case env.DeadLetter != nil && env.DeadLetter.FailedAt > 0:
		at = time.UnixMilli(env.DeadLetter.FailedAt)
	case env.Meta.CreatedAt > 0:
		at = time.UnixMilli(env.Meta.CreatedAt)
	}
	return s.match(env.URN(), env.DeadLetter, at)
}

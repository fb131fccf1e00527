package main

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/babelqueue/babelqueue-go/core/driver"
)

// backlogStore is a driver.ReinjectBacklogHook that keeps the latest
// sample of every retry tier the re-injectors carry, for /metrics, and
// when each tier was last sampled successfully, for /healthz. A tier
// counts as sampled from the start, so a tier is stale only once no good
// sample of it arrived within maxAge of the start or of its last one.
type backlogStore struct {
	now    func() time.Time
	maxAge time.Duration

	mu    sync.Mutex
	tiers map[string]*tierBacklog
}

// tierBacklog is what /metrics reports of one tier: the counts of its
// last good sample, when that was taken, and how many samples failed.
type tierBacklog struct {
	last     driver.ReinjectBacklog // last good sample (Err nil)
	lastOK   time.Time              // when it arrived (or the start)
	hasGood  bool
	failing  bool // the latest sample failed
	failures int64
	lastErr  string
}

// backlogSlack is how late a good sample may be beyond its interval: a
// sample takes up to its own bound (the interval, at least 1s and at most
// 10s, as the Kafka binding bounds it) plus a second of scheduling.
func backlogSlack(interval time.Duration) time.Duration {
	return min(max(interval, time.Second), 10*time.Second) + time.Second
}

// newBacklogStore expects samples of tiers every interval; a tier is
// stale once no good sample arrived for interval + slack.
func newBacklogStore(tiers []string, interval, slack time.Duration, now func() time.Time) *backlogStore {
	s := &backlogStore{now: now, maxAge: interval + slack, tiers: make(map[string]*tierBacklog, len(tiers))}
	start := now()
	for _, t := range tiers {
		s.tiers[t] = &tierBacklog{lastOK: start}
	}
	return s
}

// OnReinjectBacklog records one sample.
func (s *backlogStore) OnReinjectBacklog(_ context.Context, tiers []driver.ReinjectBacklog) {
	at := s.now()
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, tb := range tiers {
		st := s.tiers[tb.Tier]
		if st == nil {
			st = &tierBacklog{lastOK: at}
			s.tiers[tb.Tier] = st
		}
		if tb.Err != nil {
			st.failing, st.lastErr = true, tb.Err.Error()
			st.failures++
			continue
		}
		st.last, st.lastOK, st.hasGood, st.failing = tb, at, true, false
	}
}

// stale returns the tier with the oldest good sample, and how old it is,
// when that is older than the bound; ok is false when every tier is fresh.
func (s *backlogStore) stale() (tier string, age time.Duration, lastErr string, ok bool) {
	now := s.now()
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, name := range s.sortedLocked() {
		st := s.tiers[name]
		if a := now.Sub(st.lastOK); a > s.maxAge && a > age {
			tier, age, lastErr, ok = name, a, st.lastErr, true
		}
	}
	return tier, age, lastErr, ok
}

func (s *backlogStore) sortedLocked() []string {
	names := make([]string, 0, len(s.tiers))
	for n := range s.tiers {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// writeMetrics writes the backlog gauges in the Prometheus text format.
// A tier not sampled successfully yet has no backlog lines.
func (s *backlogStore) writeMetrics(w io.Writer) {
	s.mu.Lock()
	defer s.mu.Unlock()
	names := s.sortedLocked()
	type family struct{ name, help, kind string }
	gauge := func(name, help string) family { return family{name, help, "gauge"} }
	head := func(f family) {
		fmt.Fprintf(w, "# HELP %s %s\n# TYPE %s %s\n", f.name, f.help, f.name, f.kind)
	}
	good := func(each func(name string, st *tierBacklog)) {
		for _, n := range names {
			if st := s.tiers[n]; st.hasGood {
				each(n, st)
			}
		}
	}
	head(gauge("bq_reinject_backlog_records", "Records waiting in the retry tier, not carried yet (last good sample)."))
	good(func(n string, st *tierBacklog) {
		fmt.Fprintf(w, "bq_reinject_backlog_records{tier=%q,queue=%q} %d\n", n, st.last.Queue, st.last.Backlog)
	})
	head(gauge("bq_reinject_backlog_oldest_age_seconds", "How long the oldest waiting record of the tier has waited (0 when none waits)."))
	good(func(n string, st *tierBacklog) {
		fmt.Fprintf(w, "bq_reinject_backlog_oldest_age_seconds{tier=%q,queue=%q} %s\n", n, st.last.Queue, seconds(st.last.OldestAge))
	})
	head(gauge("bq_reinject_backlog_oldest_lag_seconds", "How far past its due time the oldest waiting record of the tier is (0 when on time)."))
	good(func(n string, st *tierBacklog) {
		fmt.Fprintf(w, "bq_reinject_backlog_oldest_lag_seconds{tier=%q,queue=%q} %s\n", n, st.last.Queue, seconds(st.last.OldestLag))
	})
	head(gauge("bq_reinject_backlog_sample_time_seconds", "When the tier was last sampled successfully (0: never)."))
	for _, n := range names {
		st, ts := s.tiers[n], "0"
		if st.hasGood {
			ts = strconv.FormatFloat(float64(st.lastOK.UnixMilli())/1000, 'f', -1, 64)
		}
		fmt.Fprintf(w, "bq_reinject_backlog_sample_time_seconds{tier=%q} %s\n", n, ts)
	}
	head(gauge("bq_reinject_backlog_sample_ok", "1 when the latest backlog sample of the tier succeeded."))
	for _, n := range names {
		st := s.tiers[n]
		fmt.Fprintf(w, "bq_reinject_backlog_sample_ok{tier=%q} %d\n", n, b2i(st.hasGood && !st.failing))
	}
	head(family{"bq_reinject_backlog_sample_errors_total", "Backlog samples of the tier that failed.", "counter"})
	for _, n := range names {
		fmt.Fprintf(w, "bq_reinject_backlog_sample_errors_total{tier=%q} %d\n", n, s.tiers[n].failures)
	}
}

// seconds formats d in seconds without an exponent.
func seconds(d time.Duration) string {
	return strconv.FormatFloat(d.Seconds(), 'f', -1, 64)
}

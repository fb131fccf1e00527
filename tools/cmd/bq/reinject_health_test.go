package main

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

func TestReinjectHealthzTurnsUnhealthyWhenBrokerSilent(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s := &reinjectServer{writer: &countingWriter{byTopic: map[string]int64{}}, unhealthyAfter: 10 * time.Second,
		now: func() time.Time { return now }, mismatch: &tierMismatch{durations: map[string]time.Duration{"o.retry.1": time.Second}, counts: map[string]int64{}}}
	s.running.Store(true)
	s.lastReachable.Store(now.UnixNano())
	get := func(path string, h http.HandlerFunc) (int, string) {
		rec := httptest.NewRecorder()
		h(rec, httptest.NewRequest(http.MethodGet, path, nil))
		return rec.Code, rec.Body.String()
	}
	if code, _ := get("/healthz", s.healthz); code != http.StatusOK {
		t.Errorf("healthz with a broker that just answered: %d", code)
	}
	now = now.Add(10 * time.Second)
	if code, _ := get("/healthz", s.healthz); code != http.StatusOK {
		t.Errorf("healthz at the bound: %d", code)
	}
	now = now.Add(2 * time.Second)
	code, body := get("/healthz", s.healthz)
	if code != http.StatusServiceUnavailable || !strings.Contains(body, "broker unreachable for 12s") {
		t.Errorf("healthz after 12s of silence: %d %q", code, body)
	}
	_, metrics := get("/metrics", s.metrics)
	for _, m := range []string{"bq_reinject_broker_reachable 0", `bq_reinject_tier_mismatch_total{tier="o.retry.1"} 0`} {
		if !strings.Contains(metrics, m) {
			t.Errorf("metrics lack %q:\n%s", m, metrics)
		}
	}
	s.running.Store(false)
	if code, _ := get("/healthz", s.healthz); code != http.StatusServiceUnavailable {
		t.Errorf("healthz when stopped: %d", code)
	}
}

func TestRedriveReportInterruptedIsResumable(t *testing.T) {
	r := newRedriveReport("q.dlq", "bq-redrive.q.dlq", false)
	r.Interrupted = true
	var b strings.Builder
	if err := r.write(&b); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "run the same command again to resume") || strings.Contains(b.String(), "stopped by an error") {
		t.Errorf("interrupted report:\n%s", b.String())
	}
}

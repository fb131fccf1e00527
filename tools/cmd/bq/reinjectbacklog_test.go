package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	kafkago "github.com/segmentio/kafka-go"

	"github.com/babelqueue/babelqueue-go/brokertest/devkafka"
	"github.com/babelqueue/babelqueue-go/core/bqtest"
	"github.com/babelqueue/babelqueue-go/core/driver"
)

func getHandler(path string, h http.HandlerFunc) (int, string) {
	rec := httptest.NewRecorder()
	h(rec, httptest.NewRequest(http.MethodGet, path, nil))
	return rec.Code, rec.Body.String()
}

// TestReinjectBacklogHealthAndMetrics: /metrics reports each tier's last
// good sample; /healthz turns 503 once a tier has had no good sample for
// the interval plus the slack, although the broker answers, and turns
// 200 again with the next good sample.
func TestReinjectBacklogHealthAndMetrics(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	interval := 2 * time.Second
	store := newBacklogStore([]string{"o.retry.1", "o.retry.2"}, interval, backlogSlack(interval), clock)
	if store.maxAge != 5*time.Second {
		t.Fatalf("bound %v, want 2s + 2s + 1s", store.maxAge)
	}
	s := &reinjectServer{writer: &countingWriter{byTopic: map[string]int64{}}, unhealthyAfter: time.Hour, now: clock, backlog: store}
	s.running.Store(true)
	s.lastReachable.Store(now.UnixNano())
	ctx := context.Background()

	if code, body := getHandler("/healthz", s.healthz); code != http.StatusOK {
		t.Fatalf("healthz at the start: %d %q", code, body)
	}
	_, m := getHandler("/metrics", s.metrics)
	if strings.Contains(m, "bq_reinject_backlog_records{") || !strings.Contains(m, `bq_reinject_backlog_sample_ok{tier="o.retry.1"} 0`) {
		t.Errorf("metrics before a sample:\n%s", m)
	}

	now = now.Add(time.Second)
	store.OnReinjectBacklog(ctx, []driver.ReinjectBacklog{
		{Tier: "o.retry.1", TierIndex: 1, Queue: "o", Backlog: 3, OldestAge: 7 * time.Second, OldestLag: 1500 * time.Millisecond},
		{Tier: "o.retry.2", TierIndex: 2, Queue: "o"},
	})
	_, m = getHandler("/metrics", s.metrics)
	for _, want := range []string{
		`bq_reinject_backlog_records{tier="o.retry.1",queue="o"} 3`,
		`bq_reinject_backlog_oldest_age_seconds{tier="o.retry.1",queue="o"} 7`,
		`bq_reinject_backlog_oldest_lag_seconds{tier="o.retry.1",queue="o"} 1.5`,
		`bq_reinject_backlog_records{tier="o.retry.2",queue="o"} 0`,
		`bq_reinject_backlog_sample_ok{tier="o.retry.2"} 1`,
		fmt.Sprintf(`bq_reinject_backlog_sample_time_seconds{tier="o.retry.1"} %d`, now.Unix()),
	} {
		if !strings.Contains(m, want) {
			t.Errorf("metrics lack %q:\n%s", want, m)
		}
	}

	// Tier 2 keeps failing; tier 1 keeps succeeding.
	for range 3 {
		now = now.Add(interval)
		store.OnReinjectBacklog(ctx, []driver.ReinjectBacklog{
			{Tier: "o.retry.1", Queue: "o", Backlog: 1},
			{Tier: "o.retry.2", Queue: "o", Err: errors.New("read o.retry.2/0: i/o timeout")},
		})
	}
	// 6s since tier 2's last good sample: more than 5s.
	code, body := getHandler("/healthz", s.healthz)
	if code != http.StatusServiceUnavailable || !strings.Contains(body, "no backlog sample of o.retry.2 for 6s (more than 5s)") || !strings.Contains(body, "i/o timeout") {
		t.Errorf("healthz with a stale tier: %d %q", code, body)
	}
	_, m = getHandler("/metrics", s.metrics)
	for _, want := range []string{
		`bq_reinject_backlog_sample_ok{tier="o.retry.2"} 0`,
		`bq_reinject_backlog_sample_errors_total{tier="o.retry.2"} 3`,
		`bq_reinject_backlog_records{tier="o.retry.2",queue="o"} 0`, // the last good one is kept
		`bq_reinject_backlog_records{tier="o.retry.1",queue="o"} 1`,
	} {
		if !strings.Contains(m, want) {
			t.Errorf("metrics lack %q:\n%s", want, m)
		}
	}
	store.OnReinjectBacklog(ctx, []driver.ReinjectBacklog{{Tier: "o.retry.2", Queue: "o"}})
	if code, body := getHandler("/healthz", s.healthz); code != http.StatusOK {
		t.Errorf("healthz after a good sample: %d %q", code, body)
	}

	// No sample at all within the bound (the sampler is stuck).
	now = now.Add(5*time.Second + time.Millisecond)
	if code, body := getHandler("/healthz", s.healthz); code != http.StatusServiceUnavailable || !strings.Contains(body, "no backlog sample of o.retry.1") {
		t.Errorf("healthz without samples: %d %q", code, body)
	}
}

// metricValue returns the value of the first sample line starting with
// prefix.
func metricValue(metrics, prefix string) (float64, bool) {
	for _, l := range strings.Split(metrics, "\n") {
		if rest, ok := strings.CutPrefix(l, prefix+" "); ok {
			v, err := strconv.ParseFloat(rest, 64)
			return v, err == nil
		}
	}
	return 0, false
}

// TestEmbeddedReinjectReportsBacklog runs bq reinject on the embedded
// broker: two records wait out a 1h tier, so /metrics reports a backlog
// of 2 whose oldest record has waited at least its 5s-old timestamp and
// is not late; once the broker is gone the samples fail, and /healthz
// turns 503 on the stale backlog within the interval plus the slack
// (--unhealthy-after is an hour here, so that is the only cause).
func TestEmbeddedReinjectReportsBacklog(t *testing.T) {
	clearBrokerEnv(t)
	b, err := devkafka.Start(devkafka.WithTopics(1, "orders", "orders.retry.1"))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()

	w := &kafkago.Writer{Addr: kafkago.TCP(b.Addrs()...), BatchTimeout: time.Millisecond, RequiredAcks: kafkago.RequireAll}
	defer w.Close()
	for i := range 2 {
		body := fmt.Sprintf(`{"job":"urn:bq:retry","trace_id":"t","data":{},"meta":{"id":"r-%d","queue":"orders","lang":"go","schema_version":1,"created_at":1},"attempts":1}`, i)
		err := w.WriteMessages(ctx, kafkago.Message{Topic: "orders.retry.1", Value: []byte(body), Time: time.Now().Add(-5 * time.Second),
			Headers: []kafkago.Header{{Key: "bq-delay", Value: []byte("3600000")}, {Key: "bq-original-topic", Value: []byte("orders")}, {Key: "bq-attempts", Value: []byte("1")}}})
		if err != nil {
			t.Fatal(err)
		}
	}

	rctx, rcancel := context.WithCancel(ctx)
	defer rcancel()
	pr, pw := io.Pipe()
	done := make(chan int, 1)
	var errOut bqtest.SyncBuffer
	go func() {
		defer pw.Close()
		done <- run(rctx, []string{"reinject", "-b", strings.Join(b.Addrs(), ","), "-t", "orders", "--tiers", "1h", "-g", "bq-reinject-backlog",
			"--http", "127.0.0.1:0", "--backlog-interval", "1s", "--unhealthy-after", "1h"}, pw, &errOut)
	}()
	line := make(chan string, 1)
	go func() {
		buf := make([]byte, 256)
		n, _ := pr.Read(buf)
		line <- string(buf[:n])
		_, _ = io.Copy(io.Discard, pr)
	}()
	var addr string
	select {
	case l := <-line:
		var ok bool
		if addr, ok = strings.CutPrefix(strings.TrimSpace(l), "BQ_REINJECT_HTTP="); !ok {
			t.Fatalf("first line %q (stderr %s)", l, errOut.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("no address line (stderr %s)", errOut.String())
	}
	get := func(path string) (int, string) {
		t.Helper()
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+path, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}

	const records = `bq_reinject_backlog_records{tier="orders.retry.1",queue="orders"}`
	var metrics string
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		_, metrics = get("/metrics")
		if v, ok := metricValue(metrics, records); ok && v == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no backlog of 2 reported:\n%s\nstderr %s", metrics, errOut.String())
		}
	}
	if age, ok := metricValue(metrics, `bq_reinject_backlog_oldest_age_seconds{tier="orders.retry.1",queue="orders"}`); !ok || age < 5 || age > 60 {
		t.Errorf("oldest age %v (%v), want 5s..60s:\n%s", age, ok, metrics)
	}
	if lag, ok := metricValue(metrics, `bq_reinject_backlog_oldest_lag_seconds{tier="orders.retry.1",queue="orders"}`); !ok || lag != 0 {
		t.Errorf("oldest lag %v (%v), want 0 on a 1h tier:\n%s", lag, ok, metrics)
	}
	if code, body := get("/healthz"); code != http.StatusOK {
		t.Fatalf("/healthz with fresh samples: %d %q", code, body)
	}

	b.Close()
	stale := regexp.MustCompile(`no backlog sample of orders\.retry\.1 for [0-9.]+s \(more than 3s\)`)
	start := time.Now()
	for deadline := start.Add(20 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		code, body := get("/healthz")
		if code == http.StatusServiceUnavailable {
			if !stale.MatchString(body) {
				t.Errorf("/healthz 503 for another cause: %q", body)
			}
			t.Logf("healthz 503 %v after the broker closed: %s", time.Since(start).Round(100*time.Millisecond), strings.TrimSpace(body))
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("/healthz still %d %q 20s after the broker closed", code, body)
		}
	}
	_, metrics = get("/metrics")
	if v, ok := metricValue(metrics, `bq_reinject_backlog_sample_ok{tier="orders.retry.1"}`); !ok || v != 0 {
		t.Errorf("sample_ok %v after the broker closed:\n%s", v, metrics)
	}
	rcancel()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("reinject did not stop")
	}
}

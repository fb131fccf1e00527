package otel

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	babelqueue "github.com/babelqueue/babelqueue-go/core"
	"github.com/babelqueue/babelqueue-go/core/bqtest"
	"github.com/babelqueue/babelqueue-go/core/driver"
	"github.com/babelqueue/babelqueue-go/core/gdpr"

	"github.com/babelqueue/babelqueue-go/otel/internal/oteltest"
)

// handlerTime is how long every handler of these tests runs, on the fake
// clock of the App.
const handlerTime = 250 * time.Millisecond

// handlerErrType is the error.type of the handlers' errors.New errors.
const handlerErrType = "*errors.errorString"

// gatedBody is an envelope of schema version 2, which the version gate
// rejects.
const gatedBody = `{"job":"` + testURN + `","trace_id":"t1","data":{},"meta":{"id":"m1","queue":"orders","lang":"php","schema_version":2,"created_at":1},"attempts":0}`

// undecryptableBody carries a protected field no key opens.
const undecryptableBody = `{"job":"` + testURN + `","trace_id":"t1","data":{"email":"AAAA"},"meta":{"id":"m1","queue":"orders","lang":"php","schema_version":1,"created_at":1},"attempts":0}`

// undecryptable is a field protector for testURN's email.
func undecryptable() babelqueue.Option {
	c, err := gdpr.NewAESGCM(make([]byte, 16))
	if err != nil {
		panic(err)
	}
	p, err := gdpr.NewProtector(gdpr.PathsByURN{testURN: gdpr.NewPaths("email")}, c)
	if err != nil {
		panic(err)
	}
	return babelqueue.WithFieldProtector(p)
}

// settled is what one delivery of an outcome case must end with.
type settled struct {
	outcome, reason, target string
	delayMS                 string // babelqueue.delay_ms on the span; "" for none
	handler                 string // the handler result measured: "success", "error", or "" when no handler ran
}

type outcomeCase struct {
	name    string
	opts    []babelqueue.Option
	mem     []bqtest.MemoryOption
	fail    bool   // the handler of testURN returns an error
	noRoute bool   // no handler for testURN
	body    string // a raw body published instead of an App envelope
	fault   string // the transport operation that fails
	// faultErr is the error of the failing operation (default: a plain
	// refusal).
	faultErr error
	stop     bool // the handler cancels the Drain and fails
	wantErr  bool // Drain returns an error (a settle failure)
	want     []settled
	// counters lists the expected data points of every counter but
	// MetricSentMessages, one entry per unit counted: "<metric> k=v ...",
	// metric by its last name segment ("consumed" for
	// MetricConsumedMessages, with messaging.operation.name=process
	// implied), keys by theirs (outcome, reason, target, destination,
	// error for error.type), messaging.system and
	// messaging.destination.name=orders implied.
	counters []string
}

// outcomeCases holds one case per outcome and reason the App reports.
func outcomeCases() []outcomeCase {
	tiers := bqtest.WithMemoryRetryTiers(time.Minute) // a retry stays delayed on the fake clock
	noDLQ := babelqueue.WithDeadLetter(false)
	one := babelqueue.WithMaxAttempts(1)
	strategy := babelqueue.WithUnknownURNStrategy
	return []outcomeCase{
		{name: "handled", want: []settled{{outcome: "handled", handler: "success"}},
			counters: []string{"consumed outcome=handled"}},
		{name: "retried/failed", mem: []bqtest.MemoryOption{tiers}, fail: true,
			want:     []settled{{outcome: "retried", reason: "failed", target: "orders", delayMS: "60000", handler: "error"}},
			counters: []string{"consumed outcome=retried reason=failed error=failed", "retried reason=failed target=orders"}},
		{name: "retried/failed/binding-settles", fail: true,
			mem:      []bqtest.MemoryOption{tiers, bqtest.WithMemoryFeatures(driver.Features{Keys: true, Headers: true, Delay: true, SettlesRetry: true, HandBack: driver.HandBackNack})},
			want:     []settled{{outcome: "retried", reason: "failed", target: "orders", delayMS: "60000", handler: "error"}},
			counters: []string{"consumed outcome=retried reason=failed error=failed", "retried reason=failed target=orders"}},
		{name: "retried/unknown_urn", mem: []bqtest.MemoryOption{tiers}, noRoute: true, opts: []babelqueue.Option{strategy(babelqueue.StrategyFail)},
			want:     []settled{{outcome: "retried", reason: "unknown_urn", target: "orders", delayMS: "60000"}},
			counters: []string{"consumed outcome=retried reason=unknown_urn error=unknown_urn", "retried reason=unknown_urn target=orders"}},
		{name: "retried/poison", mem: []bqtest.MemoryOption{tiers}, body: "not json", opts: []babelqueue.Option{noDLQ},
			want:     []settled{{outcome: "retried", reason: "poison", target: "orders", delayMS: "60000"}},
			counters: []string{"consumed outcome=retried reason=poison error=poison", "retried reason=poison target=orders", "poison"}},
		{name: "dead_lettered/failed", fail: true, opts: []babelqueue.Option{one},
			want:     []settled{{outcome: "dead_lettered", reason: "failed", target: "orders.dlq", handler: "error"}},
			counters: []string{"consumed outcome=dead_lettered reason=failed error=failed", "dead_lettered reason=failed target=orders.dlq"}},
		{name: "dead_lettered/unknown_urn", noRoute: true, opts: []babelqueue.Option{strategy(babelqueue.StrategyDeadLetter)},
			want:     []settled{{outcome: "dead_lettered", reason: "unknown_urn", target: "orders.dlq"}},
			counters: []string{"consumed outcome=dead_lettered reason=unknown_urn error=unknown_urn", "dead_lettered reason=unknown_urn target=orders.dlq"}},
		{name: "retried/decrypt_failed", body: undecryptableBody, opts: []babelqueue.Option{undecryptable()}, mem: []bqtest.MemoryOption{tiers},
			want:     []settled{{outcome: "retried", reason: "decrypt_failed", target: "orders", delayMS: "60000"}},
			counters: []string{"consumed outcome=retried reason=decrypt_failed error=decrypt_failed", "retried reason=decrypt_failed target=orders"}},
		{name: "dead_lettered/decrypt_failed", body: undecryptableBody, opts: []babelqueue.Option{one, undecryptable()},
			want:     []settled{{outcome: "dead_lettered", reason: "decrypt_failed", target: "orders.dlq"}},
			counters: []string{"consumed outcome=dead_lettered reason=decrypt_failed error=decrypt_failed", "dead_lettered reason=decrypt_failed target=orders.dlq"}},
		{name: "dead_lettered/poison", body: "not json",
			want:     []settled{{outcome: "dead_lettered", reason: "poison", target: "orders.dlq"}},
			counters: []string{"consumed outcome=dead_lettered reason=poison error=poison", "dead_lettered reason=poison target=orders.dlq", "poison"}},
		{name: "dead_lettered/version_gated", body: gatedBody,
			want:     []settled{{outcome: "dead_lettered", reason: "version_gated", target: "orders.dlq"}},
			counters: []string{"consumed outcome=dead_lettered reason=version_gated error=version_gated", "dead_lettered reason=version_gated target=orders.dlq", "version_gated"}},
		{name: "dead_lettered/oversize", body: strings.Repeat("\xff", 900), mem: []bqtest.MemoryOption{bqtest.WithMemoryMaxMessageBytes(1000)},
			want:     []settled{{outcome: "dead_lettered", reason: "oversize", target: "orders.dlq"}},
			counters: []string{"consumed outcome=dead_lettered reason=oversize error=oversize", "dead_lettered reason=oversize target=orders.dlq"}},
		{name: "dead_lettered/oversize-retry", fail: true, fault: "retry", faultErr: driver.ErrTooLarge,
			want:     []settled{{outcome: "dead_lettered", reason: "oversize", target: "orders.dlq", handler: "error"}},
			counters: []string{"consumed outcome=dead_lettered reason=oversize error=oversize", "dead_lettered reason=oversize target=orders.dlq"}},
		{name: "dropped/failed", fail: true, opts: []babelqueue.Option{one, noDLQ},
			want:     []settled{{outcome: "dropped", reason: "failed", handler: "error"}},
			counters: []string{"consumed outcome=dropped reason=failed error=failed"}},
		{name: "dropped/unknown_urn", noRoute: true, opts: []babelqueue.Option{strategy(babelqueue.StrategyDeadLetter), noDLQ},
			want:     []settled{{outcome: "dropped", reason: "unknown_urn"}},
			counters: []string{"consumed outcome=dropped reason=unknown_urn error=unknown_urn"}},
		{name: "dropped/poison", body: "not json", opts: []babelqueue.Option{one, noDLQ},
			want:     []settled{{outcome: "dropped", reason: "poison"}},
			counters: []string{"consumed outcome=dropped reason=poison error=poison", "poison"}},
		{name: "dropped/oversize", fail: true, fault: "retry", faultErr: driver.ErrTooLarge, opts: []babelqueue.Option{noDLQ},
			want:     []settled{{outcome: "dropped", reason: "oversize", handler: "error"}},
			counters: []string{"consumed outcome=dropped reason=oversize error=oversize"}},
		{name: "dropped/version_gated", body: gatedBody, opts: []babelqueue.Option{noDLQ},
			want:     []settled{{outcome: "dropped", reason: "version_gated"}},
			counters: []string{"consumed outcome=dropped reason=version_gated error=version_gated", "version_gated"}},
		{name: "released", noRoute: true, opts: []babelqueue.Option{strategy(babelqueue.StrategyRelease)},
			// Drain reads its own release back once, releases it again and
			// stops reading the queue.
			want:     []settled{{outcome: "released", reason: "unknown_urn", target: "orders"}, {outcome: "released", reason: "unknown_urn", target: "orders"}},
			counters: []string{"consumed outcome=released reason=unknown_urn", "consumed outcome=released reason=unknown_urn"}},
		{name: "deleted", noRoute: true, opts: []babelqueue.Option{strategy(babelqueue.StrategyDelete)},
			want:     []settled{{outcome: "deleted", reason: "unknown_urn"}},
			counters: []string{"consumed outcome=deleted reason=unknown_urn"}},
		{name: "handed_back/ack-failed", fault: "Ack", wantErr: true,
			want:     []settled{{outcome: "handed_back", handler: "success"}},
			counters: []string{"consumed outcome=handed_back error=settle_failed"}},
		{name: "handed_back/retry-write-failed", fault: "retry", fail: true, wantErr: true,
			want:     []settled{{outcome: "handed_back", handler: "error"}},
			counters: []string{"consumed outcome=handed_back error=settle_failed"}},
		{name: "handed_back/dead-letter-write-failed", fault: "dead_letter", fail: true, wantErr: true, opts: []babelqueue.Option{one},
			want:     []settled{{outcome: "handed_back", handler: "error"}},
			counters: []string{"consumed outcome=handed_back error=settle_failed"}},
		{name: "handed_back/consumer-stopping", stop: true, wantErr: true,
			want:     []settled{{outcome: "handed_back", handler: "error"}},
			counters: []string{"consumed outcome=handed_back"}},
	}
}

// TestEveryOutcomeIsCountedExactly runs one delivery (two for a release)
// per outcome and reason through an App with the hooks, with and without
// Middleware on the handler, and checks every counter data point, the
// handler duration and the process spans.
func TestEveryOutcomeIsCountedExactly(t *testing.T) {
	for _, tc := range outcomeCases() {
		for _, wrapped := range []bool{false, true} {
			name := tc.name + "/hooks-only"
			if wrapped {
				name = tc.name + "/with-middleware"
			}
			t.Run(name, func(t *testing.T) { runOutcome(t, tc, wrapped) })
		}
	}
}

func runOutcome(t *testing.T, tc outcomeCase, wrapped bool) {
	h := newHarness(t)
	clock := bqtest.NewFakeClock(epoch)
	mem := bqtest.NewInMemoryTransport(append([]bqtest.MemoryOption{bqtest.WithMemoryClock(clock)}, tc.mem...)...)
	app := newApp(h, mem, append([]babelqueue.Option{babelqueue.WithClock(clock)}, tc.opts...)...)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	handler := func(context.Context, *babelqueue.Envelope) error {
		clock.Advance(handlerTime)
		if tc.stop {
			cancel()
			return context.Canceled
		}
		if tc.fail {
			return errors.New("projection store unavailable")
		}
		return nil
	}
	if wrapped {
		handler = h.tel.Middleware(handler)
	}
	route := testURN
	if tc.noRoute {
		route = "urn:babel:other"
	}
	app.Handle(route, handler)

	if tc.body != "" {
		if err := mem.Publish(ctx, "orders", tc.body); err != nil {
			t.Fatal(err)
		}
	} else if _, err := app.Publish(ctx, testURN, map[string]any{"order_id": 1}); err != nil {
		t.Fatal(err)
	}
	if tc.fault != "" {
		mem.SetFault(func(op, _ string) error {
			if op == tc.fault {
				if tc.faultErr != nil {
					return tc.faultErr
				}
				return errors.New("broker refused " + op)
			}
			return nil
		})
	}
	_, err := app.Drain(ctx)
	if (err != nil) != tc.wantErr {
		t.Fatalf("Drain: %v, want an error: %v", err, tc.wantErr)
	}

	// Every counter data point, exactly.
	want := expandCounters(tc.counters)
	if got := h.counters(t); !maps.Equal(got, want) {
		t.Errorf("counters\n got  %v\n want %v", sortedKeys(got), sortedKeys(want))
	}

	// The handler duration, once per handler call, on the App's clock.
	byResult := map[string]int{}
	for _, s := range tc.want {
		if s.handler != "" {
			byResult[s.handler]++
		}
	}
	for result, errType := range map[string]string{"success": "", "error": handlerErrType} {
		n, sum := h.Observations(t, MetricProcessDuration, map[string]string{"babelqueue.urn": testURN, "error.type": errType, "messaging.operation.name": "process"})
		wantSum := float64(byResult[result]) * handlerTime.Seconds()
		if int(n) != byResult[result] || math.Abs(sum-wantSum) > 1e-9 {
			t.Errorf("handler duration{%s}: %d observations summing %vs, want %d summing %vs", result, n, sum, byResult[result], wantSum)
		}
	}

	// One ended process span per delivery, carrying its outcome; Error
	// only when dead-lettered.
	spans := h.Ended("process orders")
	if len(spans) != len(tc.want) {
		t.Fatalf("%d process spans, want %d (all: %v)", len(spans), len(tc.want), oteltest.SpanNames(h.Spans.GetSpans()))
	}
	for i, s := range tc.want {
		got := oteltest.Attrs(spans[i])
		for k, v := range map[string]string{"babelqueue.outcome": s.outcome, "babelqueue.reason": s.reason, "babelqueue.target": s.target, "babelqueue.delay_ms": s.delayMS} {
			if got[k] != v {
				t.Errorf("span %d: %s = %q, want %q (all: %v)", i, k, got[k], v, got)
			}
		}
		wantCode := codes.Unset
		if s.outcome == "dead_lettered" {
			wantCode = codes.Error
		}
		if spans[i].Status.Code != wantCode {
			t.Errorf("span %d (%s): status %v, want %v", i, s.outcome, spans[i].Status, wantCode)
		}
	}
}

// expandCounters turns the compact counter list of an outcome case into
// the data point keys counters returns, each with its count.
func expandCounters(list []string) map[string]int64 {
	full := map[string]string{
		"outcome": string(AttrOutcome), "reason": string(AttrReason), "target": string(AttrTarget),
		"destination": "messaging.destination.name", "error": "error.type",
	}
	out := map[string]int64{}
	for _, e := range list {
		fields := strings.Fields(e)
		kv := map[string]string{"messaging.system": DefaultSystem, "messaging.destination.name": "orders"}
		for _, f := range fields[1:] {
			k, v, _ := strings.Cut(f, "=")
			kv[full[k]] = v
		}
		name := "babelqueue.messages." + fields[0]
		if fields[0] == "consumed" {
			name = MetricConsumedMessages
			kv["messaging.operation.name"] = "process"
		}
		out[pointKey(name, kv)]++
	}
	return out
}

func pointKey(metric string, kv map[string]string) string {
	keys := slices.Sorted(maps.Keys(kv))
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + "=" + kv[k]
	}
	return metric + "{" + strings.Join(parts, ",") + "}"
}

// counters returns every data point of every counter but MetricSentMessages,
// keyed by metric name and attributes.
func (h *harness) counters(t testing.TB) map[string]int64 {
	t.Helper()
	out := map[string]int64{}
	for _, sm := range h.Collect(t).ScopeMetrics {
		for _, m := range sm.Metrics {
			sum, ok := m.Data.(metricdata.Sum[int64])
			if !ok || m.Name == MetricSentMessages {
				continue
			}
			for _, dp := range sum.DataPoints {
				if dp.Value == 0 {
					continue
				}
				kv := map[string]string{}
				for _, a := range dp.Attributes.ToSlice() {
					kv[string(a.Key)] = a.Value.String()
				}
				out[pointKey(m.Name, kv)] += dp.Value
			}
		}
	}
	return out
}

func sortedKeys(m map[string]int64) []string {
	out := make([]string, 0, len(m))
	for k, v := range m {
		out = append(out, fmt.Sprintf("%s=%d", k, v))
	}
	sort.Strings(out)
	return out
}

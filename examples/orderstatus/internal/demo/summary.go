package demo

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/babelqueue/babelqueue-go/examples/orderstatus"
	"github.com/segmentio/kafka-go"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
)

// collectCounters reads the two counters, by reason.
func collectCounters(ctx context.Context, r *sdkmetric.ManualReader) (retries, deadLetters map[string]int64, err error) {
	var rm metricdata.ResourceMetrics
	if err := r.Collect(ctx, &rm); err != nil {
		return nil, nil, fmt.Errorf("collecting the counters: %w", err)
	}
	retries, deadLetters = map[string]int64{}, map[string]int64{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			sum, ok := m.Data.(metricdata.Sum[int64])
			if !ok {
				continue
			}
			dst := retries
			switch m.Name {
			case orderstatus.MetricRetries:
			case orderstatus.MetricDeadLetters:
				dst = deadLetters
			default:
				continue
			}
			for _, dp := range sum.DataPoints {
				reason, _ := dp.Attributes.Value(orderstatus.ReasonAttribute)
				dst[reason.AsString()] += dp.Value
			}
		}
	}
	return retries, deadLetters, nil
}

func printSummary(out io.Writer, r *Report, written int) {
	fmt.Fprintf(out, "\nfinal status per order (from the projection):\n")
	for _, o := range r.Orders {
		var steps []string
		for _, s := range o.History {
			steps = append(steps, string(s))
		}
		fmt.Fprintf(out, "  %-8s %-10s %s\n", o.ID, o.Status, strings.Join(steps, " -> "))
	}

	fmt.Fprintf(out, "\nretries by reason (%s):\n", orderstatus.MetricRetries)
	printCounts(out, r.Retries)
	fmt.Fprintf(out, "  %d records written to the retry topic\n", r.RetryRecords)

	fmt.Fprintf(out, "\ndead letters by reason (%s):\n", orderstatus.MetricDeadLetters)
	printCounts(out, r.DeadLetterCounts)
	fmt.Fprintf(out, "\ndead letters (%d records, with their dlq.* headers):\n", len(r.DeadLetters))
	for _, m := range r.DeadLetters {
		fmt.Fprintf(out, "  key %-7s %s\n", m.Key, dlqHeaders(m.Headers))
	}
	if len(r.LostPlaces) > 0 {
		fmt.Fprintf(out, "\nlost records: %v\n", r.LostPlaces)
	}
	fmt.Fprintf(out, "\nthe demo wrote %d records; the topics hold %d originals; run took %v\n",
		written, r.Produced, r.Elapsed.Round(10_000_000))
	fmt.Fprintf(out, "accounted: produced=%d projected=%d dead_lettered=%d lost=%d\n",
		r.Produced, r.Projected, r.DeadLettered, r.Lost)
}

func printCounts(out io.Writer, counts map[string]int64) {
	if len(counts) == 0 {
		fmt.Fprintf(out, "  (none)\n")
		return
	}
	reasons := make([]string, 0, len(counts))
	for k := range counts {
		reasons = append(reasons, k)
	}
	sort.Strings(reasons)
	for _, k := range reasons {
		fmt.Fprintf(out, "  %-20s %d\n", k, counts[k])
	}
}

func dlqHeaders(hs []kafka.Header) string {
	var parts []string
	for _, key := range []string{orderstatus.DLQHeaderReason, orderstatus.DLQHeaderTopic, orderstatus.DLQHeaderPartition,
		orderstatus.DLQHeaderOffset, orderstatus.DLQHeaderAttempts, orderstatus.DLQHeaderError} {
		v, ok := orderstatus.Header(hs, key)
		if !ok {
			continue
		}
		if len(v) > 90 {
			v = v[:87] + "..."
		}
		parts = append(parts, key+"="+v)
	}
	return strings.Join(parts, " ")
}

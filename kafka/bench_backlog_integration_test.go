//go:build integration

package kafka

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	babelqueue "github.com/babelqueue/babelqueue-go/core"
)

// backlogRecords is the backlog TestBenchKafkaBacklogMemory consumes:
// BQ_BENCH_BACKLOG records, 1,000,000 when unset.
func backlogRecords(t *testing.T) int {
	s := os.Getenv("BQ_BENCH_BACKLOG")
	if s == "" {
		return 1_000_000
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1000 {
		t.Fatalf("BQ_BENCH_BACKLOG=%q: want a count of at least 1000", s)
	}
	return n
}

// procStatusKiB reads a kB field of /proc/self/status (VmRSS, VmHWM).
func procStatusKiB(t *testing.T, field string) int64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		t.Fatalf("resident memory: %v", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), field+":"); ok {
			n, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err != nil {
				t.Fatalf("%s: %v", field, err)
			}
			return n
		}
	}
	t.Fatalf("/proc/self/status has no %s", field)
	return 0
}

// backlogBoundMiB is the documented bound (README, "Memory") on what
// consuming one queue adds to the resident memory of a process with the
// transport's defaults: the Go heap may grow to twice (GOGC=100) what is
// live, and what is live is at most the record budget
// (DefaultMaxBufferedBytes) plus, per assigned partition, one fetch
// response (1 MiB) and the kafka-go reader's queue of 64 records, plus a
// fixed 16 MiB for the group's connections, goroutines and the App.
func backlogBoundMiB(partitions int, recordBytes int) float64 {
	perPartition := float64(1<<20+64*recordBytes) / (1 << 20)
	live := float64(DefaultMaxBufferedBytes)/(1<<20) + float64(partitions)*perPartition
	return 2*live + 16
}

// TestBenchKafkaBacklogMemory fills a 6-partition topic with a backlog
// (BQ_BENCH_BACKLOG records, default 1,000,000, 200 keys) with a raw
// writer, then consumes it with an App (WithConcurrency(64, OrderKey), a
// no-op handler), sampling the process's resident memory (VmRSS) and Go
// heap every 20 ms. It prints
// "bench: kafka-backlog-consume-peak-rss value=<MiB>" (the peak while
// consuming) and the rate, and fails when the growth over the resident
// memory before consuming passes backlogBoundMiB.
func TestBenchKafkaBacklogMemory(t *testing.T) {
	benchOnly(t)
	const partitions, keys = 6, 200
	total := backlogRecords(t)
	tr := itTransport(t)
	topic := uniq("bench-backlog")
	ensure(t, tr, topic, partitions)
	ctx := bgCtx(t, 10*time.Minute)
	body := envelope(t, 0)
	fillStart := time.Now()
	fillKeyed(t, ctx, topic, body, total, keys)
	fillRate := float64(total) / time.Since(fillStart).Seconds()

	runtime.GC()
	debug.FreeOSMemory()
	baseline := float64(procStatusKiB(t, "VmRSS")) / 1024

	consumer := itTransport(t, WithGroupID(uniq("bench-backlog")))
	defer consumer.Close()
	app, err := babelqueue.NewApp(consumer, babelqueue.WithDefaultQueue(topic), babelqueue.WithPollTimeout(time.Second),
		babelqueue.WithConcurrency(64, babelqueue.OrderKey))
	if err != nil {
		t.Fatal(err)
	}
	var handled atomic.Int64
	var start atomic.Int64
	finished := make(chan struct{})
	app.Handle("urn:babel:orders:created", func(context.Context, *babelqueue.Envelope) error {
		switch c := handled.Add(1); {
		case c == 1:
			start.Store(time.Now().UnixNano())
		case c == int64(total):
			close(finished)
		}
		return nil
	})
	cctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- app.Consume(cctx, topic) }()

	var peakRSS, peakHeap float64
	samples := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	limit := time.After(5 * time.Minute)
	var end time.Time
wait:
	for {
		select {
		case <-tick.C:
			peakRSS = max(peakRSS, float64(procStatusKiB(t, "VmRSS"))/1024)
			metrics.Read(samples)
			peakHeap = max(peakHeap, float64(samples[0].Value.Uint64())/(1<<20))
		case <-finished:
			end = time.Now()
			break wait
		case <-limit:
			end = time.Now()
			break wait
		}
	}
	cancel()
	if err := <-done; err != nil && ctx.Err() == nil && cctx.Err() == nil {
		t.Errorf("consume: %v", err)
	}
	n := handled.Load()
	if n < int64(total) {
		t.Errorf("handled %d of %d records within the limit", n, total)
	}
	rate := float64(n-1) / end.Sub(time.Unix(0, start.Load())).Seconds()
	bound := backlogBoundMiB(partitions, len(body)+200)
	fmt.Printf("bench-info: kafka-backlog records=%d partitions=%d fill=%.0f msg/s baseline-rss=%.1fMiB peak-heap=%.1fMiB growth=%.1fMiB bound=%.1fMiB\n",
		total, partitions, fillRate, baseline, peakHeap, peakRSS-baseline, bound)
	fmt.Printf("bench: kafka-backlog-consume-throughput value=%.0f\n", rate)
	fmt.Printf("bench: kafka-backlog-consume-peak-rss value=%.1f\n", peakRSS)
	if peakRSS-baseline > bound {
		t.Errorf("resident memory grew %.1f MiB while consuming; the documented bound is %.1f MiB", peakRSS-baseline, bound)
	}
}

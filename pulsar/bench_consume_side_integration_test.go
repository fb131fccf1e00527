//go:build integration

package pulsar

import (
	"fmt"
	"os"
	"runtime/metrics"
	"runtime/pprof"
	"runtime/trace"
	"strconv"
	"strings"
	"testing"

	"github.com/apache/pulsar-client-go/pulsar"
)

// TestBenchPulsarConsumeSide runs chosen sides of the consume benchmark
// (BQ_BENCH=1, BQ_BENCH_SIDE a comma-separated list of ours,
// ours-prefetch, raw and raw-own-client), one phase of each per round in
// an order that rotates, so that the sides' client work can be compared
// apart: per phase it prints a "bench-side:" line with the process's CPU,
// the broker's CPU, the goroutine wake-ups (scheduling events) and heap
// allocations per message. ours-prefetch is ours switched to prefetching
// on a goroutine of its own as the concurrent loop does; raw-own-client
// is raw with its consumer on a client of its own, as ours has.
// BQ_BENCH_ROUNDS sets the number of rounds (default benchConsumeRounds).
// With BQ_BENCH_CPUPROFILE=file it also writes a CPU profile of each timed
// phase (not of the fills) to file.<side>.<round>, which go tool pprof
// merges when given them all (and compares, -diff_base); with
// BQ_BENCH_TRACE=file, an execution trace of each timed phase to
// file.<side>.<round> (go tool trace -d=parsed lists its events). It is
// informative and asserts nothing about speed.
func TestBenchPulsarConsumeSide(t *testing.T) {
	benchEnabled(t)
	if os.Getenv("BQ_BENCH_SIDE") == "" {
		t.Skip("set BQ_BENCH_SIDE to the sides to run (ours, ours-prefetch, raw, raw-own-client), comma-separated")
	}
	sides := strings.Split(os.Getenv("BQ_BENCH_SIDE"), ",")
	for _, side := range sides {
		switch side {
		case "ours", "ours-prefetch", "raw", "raw-own-client":
		default:
			t.Fatalf("BQ_BENCH_SIDE has %q: want ours, ours-prefetch, raw or raw-own-client", side)
		}
	}
	b := newConsumeBench(t)
	run := func(side string, n int) []float64 {
		b.prefetch = side == "ours-prefetch"
		b.rawClient = nil
		switch side {
		case "ours", "ours-prefetch":
			return b.ours(n, 0, nil)
		case "raw-own-client":
			c := rawClient(t)
			defer c.Close()
			b.rawClient = func() pulsar.Client { return c }
		}
		return b.raw(n)
	}
	for _, side := range sides {
		run(side, benchWarmupMessages)
	}

	profPath := os.Getenv("BQ_BENCH_CPUPROFILE")
	tracePath := os.Getenv("BQ_BENCH_TRACE")
	var prof, tr *os.File
	var c0 sideCounters
	var profName, traceName string
	b.timed = func(start bool) {
		if start {
			if profPath != "" {
				f, err := os.Create(profName)
				if err != nil {
					t.Fatal(err)
				}
				prof = f
				if err := pprof.StartCPUProfile(f); err != nil {
					t.Fatal(err)
				}
			}
			if tracePath != "" {
				f, err := os.Create(traceName)
				if err != nil {
					t.Fatal(err)
				}
				tr = f
				if err := trace.Start(f); err != nil {
					t.Fatal(err)
				}
			}
			c0 = readSideCounters()
			return
		}
		c1 := readSideCounters()
		b.lastCounters = c1.minus(c0)
		if tr != nil {
			trace.Stop()
			tr.Close()
			tr = nil
		}
		if prof != nil {
			pprof.StopCPUProfile()
			prof.Close()
			prof = nil
		}
	}
	rounds := benchConsumeRounds
	if v, err := strconv.Atoi(os.Getenv("BQ_BENCH_ROUNDS")); err == nil && v > 0 {
		rounds = v
	}
	for round := 1; round <= rounds; round++ {
		for i := range sides {
			side := sides[(round+i)%len(sides)]
			profName = fmt.Sprintf("%s.%s.%d", profPath, side, round)
			traceName = fmt.Sprintf("%s.%s.%d", tracePath, side, round)
			r := run(side, benchConsumeMessages)
			st, c := b.last, b.lastCounters
			n := float64(st.n)
			fmt.Printf("bench-side: pulsar-consume side=%s round=%d rate=%.0f cpu-us-per-msg=%.2f broker-cpu-us-per-msg=%.1f wakeups-per-msg=%.2f allocs-per-msg=%.1f bytes-per-msg=%.0f\n",
				side, round, r[0], float64(st.cpu.Microseconds())/n, st.perMessage(st.host.broker),
				float64(c.sched)/n, float64(c.allocs)/n, float64(c.bytes)/n)
		}
	}
}

// sideCounters are the runtime's cumulative counters a side phase reads.
type sideCounters struct{ sched, allocs, bytes uint64 }

func (c sideCounters) minus(o sideCounters) sideCounters {
	return sideCounters{sched: c.sched - o.sched, allocs: c.allocs - o.allocs, bytes: c.bytes - o.bytes}
}

// readSideCounters reads the scheduling events (a goroutine made runnable
// and then run: the runtime samples one transition in gTrackingPeriod = 8
// of each goroutine into the scheduler-latency histogram, so its count is
// scaled by 8) and the heap allocations so far.
func readSideCounters() sideCounters {
	s := []metrics.Sample{{Name: "/sched/latencies:seconds"}, {Name: "/gc/heap/allocs:objects"}, {Name: "/gc/heap/allocs:bytes"}}
	metrics.Read(s)
	var c sideCounters
	if s[0].Value.Kind() == metrics.KindFloat64Histogram {
		for _, n := range s[0].Value.Float64Histogram().Counts {
			c.sched += n
		}
		c.sched *= 8
	}
	c.allocs = s[1].Value.Uint64()
	c.bytes = s[2].Value.Uint64()
	return c
}

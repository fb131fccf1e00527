//go:build integration

package outbox_test

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
	"syscall"
	"testing"
	"time"

	"github.com/babelqueue/babelqueue-go/brokertest"
	"github.com/babelqueue/babelqueue-go/core/driver"
	"github.com/babelqueue/babelqueue-go/outbox"
)

// ackingTransport acknowledges every batch at once: what is left of a
// relay's run is its own work (claims, settlements) and the database's.
type ackingTransport struct{ driver.Transport }

func (ackingTransport) SendBatch(_ context.Context, outs []*driver.Outgoing) ([]driver.Receipt, error) {
	return nil, nil
}

func processCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// TestBenchRelayOwnCPU prints the relay process's CPU per row of Run over
// the bench's table (20,000 rows, 2,000 keys, claims of 500, two batches in
// flight) with a transport that acknowledges at once, so no broker client:
// "bench: outbox-relay-own-cpu-us-per-row value=…" (the claims, the
// settlements, their scheduling and garbage; the test's polling of Stats
// too), the allocations and bytes allocated per row, and the entries the
// claims' index scans returned per row ("...-claim-index-reads-per-row":
// 1 would be each row read once), three rounds.
func TestBenchRelayOwnCPU(t *testing.T) {
	if os.Getenv("BQ_BENCH") == "" {
		t.Skip("benchmark: set BQ_BENCH=1")
	}
	const n, keys, rounds = 20000, 2000, 3
	db, _ := brokertest.Postgres(t)
	ctx := context.Background()
	body := []byte(`{"meta":{"id":"00000000-0000-0000-0000-000000000000","urn":"urn:babel:bench","queue":"bq-outbox-bench","created_at":"2026-12-04T00:00:00.000Z","attempts":0},"data":{"i":12345}}` + fmt.Sprintf("%090d", 0))
	var cpu, wall time.Duration
	var mallocs, bytes uint64
	var visits int64
	for range rounds {
		ob := newOutbox(t, db, outbox.Postgres)
		for i := 0; i < n; i += 1000 {
			msgs := make([]outbox.Message, 0, 1000)
			for j := i; j < i+1000; j++ {
				msgs = append(msgs, outbox.Message{Queue: "bq-outbox-bench", Key: fmt.Appendf(nil, "k%d", j%keys), Body: body})
			}
			write(t, db, ob, true, msgs...)
		}
		if _, err := db.ExecContext(ctx, "ANALYZE "+ob.Table()); err != nil {
			t.Fatal(err)
		}
		// The relay has a pool of its own, closed after the run, so that its
		// backends report their index scans when they exit.
		rdb := relayPool(t)
		r := newRelay(t, rdb, ob, outbox.TransportSender{Transport: ackingTransport{}}, outbox.WithBatchSize(500), outbox.WithInFlight(2), outbox.WithPoll(10*time.Millisecond))
		rctx, cancel := context.WithCancel(ctx)
		done := make(chan error, 1)
		var m0, m1 runtime.MemStats
		runtime.ReadMemStats(&m0)
		c0, w0 := processCPU(), time.Now()
		go pprof.Do(rctx, pprof.Labels("side", "relay"), func(rctx context.Context) { done <- r.Run(rctx) })
		for {
			st, err := ob.Stats(ctx, db)
			if err != nil {
				t.Fatal(err)
			}
			if st.Pending == 0 {
				break
			}
			if time.Since(w0) > time.Minute {
				t.Fatalf("still pending after a minute: %+v", st)
			}
			time.Sleep(5 * time.Millisecond)
		}
		cpu, wall = cpu+processCPU()-c0, wall+time.Since(w0)
		runtime.ReadMemStats(&m1)
		mallocs, bytes = mallocs+m1.Mallocs-m0.Mallocs, bytes+m1.TotalAlloc-m0.TotalAlloc
		cancel()
		<-done
		visits += claimIndexReads(t, db, rdb, ob)
	}
	rows := float64(rounds * n)
	fmt.Printf("bench: outbox-relay-own-cpu-us-per-row value=%.2f (rows/s %.0f)\n", float64(cpu.Microseconds())/rows, rows/wall.Seconds())
	fmt.Printf("bench: outbox-relay-own-allocs-per-row value=%.1f\n", float64(mallocs)/rows)
	fmt.Printf("bench: outbox-relay-own-bytes-per-row value=%.0f\n", float64(bytes)/rows)
	fmt.Printf("bench: outbox-relay-own-claim-index-reads-per-row value=%.2f\n", float64(visits)/rows)
}

// relayAppName names the backends of relayPool's connections.
const relayAppName = "bqrelayown"

// relayPool opens a pool of its own on the test's server for a relay, its
// backends named relayAppName.
func relayPool(t *testing.T) *sql.DB {
	t.Helper()
	rdb := brokertest.PostgresWith(t, "application_name", relayAppName)
	rdb.SetMaxIdleConns(8)
	return rdb
}

// claimIndexReads closes rdb, waits until its backends have exited (a
// backend reports its statistics when it exits), and returns the entries
// the claims' scans of ob's bucket index returned, each one a visit to the
// table: the rows kept, and the deleted rows read again because their
// index entries were not yet marked dead (DESIGN.md, seventh round).
func claimIndexReads(t *testing.T, db, rdb *sql.DB, ob *outbox.Outbox) int64 {
	t.Helper()
	_ = rdb.Close()
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		var open int
		if err := db.QueryRow(`SELECT count(*) FROM pg_stat_activity WHERE application_name = $1`, relayAppName).Scan(&open); err != nil {
			t.Fatal(err)
		}
		if open == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d relay backends still open 5 s after the pool closed", open)
		}
	}
	var reads int64
	if err := db.QueryRow(`SELECT coalesce(sum(idx_tup_read), 0) FROM pg_stat_user_indexes WHERE indexrelname = $1`, ob.Table()+"_pending_bucket").Scan(&reads); err != nil {
		t.Fatal(err)
	}
	return reads
}

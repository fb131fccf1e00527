// Command bqoutboxkill is the outbox's SIGKILL test: it writes -rows rows
// into an outbox table on PostgreSQL (BQ_POSTGRES_URL) while -relays relay
// processes (this program with -role relay) publish them to a new Kafka
// topic (BQ_KAFKA_BROKERS), SIGKILLs a random relay at random moments at
// least -kills times (restarting it each time), waits until no row is
// pending, reads the topic back and prints one line:
//
//	outbox-kill: rows=... kills=... relays=... published=... distinct=... lost=0 duplicates=... order_violations=0 took=...
//
// It exits 1 when a row is lost or a key's order is violated, and when
// -timeout passes first.
package main

import (
	"context"
	"database/sql"
	"flag"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"syscall"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib"

	babelqueue "github.com/babelqueue/babelqueue-go/core"
	"github.com/babelqueue/babelqueue-go/kafka"
	"github.com/babelqueue/babelqueue-go/outbox"
	"github.com/babelqueue/babelqueue-go/outbox/integration"
)

func main() {
	role := flag.String("role", "driver", "driver or relay")
	rows := flag.Int("rows", 10000, "rows to write")
	kills := flag.Int("kills", 12, "minimum SIGKILLs of relay processes")
	relays := flag.Int("relays", 2, "relay processes")
	keys := flag.Int("keys", 50, "order keys")
	timeout := flag.Duration("timeout", 5*time.Minute, "bound of the whole run")
	table := flag.String("table", "", "outbox table (relay role)")
	flag.Parse()
	pg, brokers := os.Getenv("BQ_POSTGRES_URL"), os.Getenv("BQ_KAFKA_BROKERS")
	if pg == "" || brokers == "" {
		fmt.Fprintln(os.Stderr, "bqoutboxkill: BQ_POSTGRES_URL and BQ_KAFKA_BROKERS must be set (tools/brokers/with-brokers.sh)")
		os.Exit(2)
	}
	broker := strings.Split(brokers, ",")[0]
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var err error
	if *role == "relay" {
		err = relay(ctx, pg, broker, *table)
	} else {
		ctx, cancel := context.WithTimeout(ctx, *timeout)
		defer cancel()
		err = drive(ctx, pg, broker, *rows, *kills, *relays, *keys)
	}
	if err != nil && (*role == "driver" || ctx.Err() == nil) {
		fmt.Fprintln(os.Stderr, "bqoutboxkill:", err)
		os.Exit(1)
	}
}

func relay(ctx context.Context, pg, broker, table string) error {
	db, err := sql.Open("pgx", pg)
	if err != nil {
		return err
	}
	defer db.Close()
	ob, err := outbox.New(outbox.Postgres, outbox.WithTable(table))
	if err != nil {
		return err
	}
	tr, err := kafka.New(kafka.WithBrokers(broker), kafka.WithLinger(2*time.Millisecond))
	if err != nil {
		return err
	}
	defer tr.Close()
	opts := []outbox.RelayOption{outbox.WithLease(2 * time.Second), outbox.WithBatchSize(200),
		outbox.WithPoll(50 * time.Millisecond), outbox.WithBackoff(100*time.Millisecond, time.Second),
		outbox.WithLogger(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError})))}
	r, err := outbox.NewRelay(db, ob, outbox.TransportSender{Transport: tr}, opts...)
	if err != nil {
		return err
	}
	return r.Run(ctx)
}

type payload struct {
	Key string `json:"key"`
	Seq int    `json:"seq"`
}

func drive(ctx context.Context, pg, broker string, rows, minKills, nRelays, nKeys int) error {
	start := time.Now()
	db, err := sql.Open("pgx", pg)
	if err != nil {
		return err
	}
	defer db.Close()
	suffix := time.Now().UnixNano()
	table, topic := fmt.Sprintf("bq_outbox_kill_%d", suffix), fmt.Sprintf("bq-outbox-kill-%d", suffix)
	ob, err := outbox.New(outbox.Postgres, outbox.WithTable(table))
	if err != nil {
		return err
	}
	if err := ob.Migrate(ctx, db); err != nil {
		return err
	}
	defer func() { _, _ = db.ExecContext(context.WithoutCancel(ctx), "DROP TABLE IF EXISTS "+table) }()
	if err := integration.CreateTopic(broker, topic); err != nil {
		return err
	}
	rs, err := startRelays(table, nRelays)
	if err != nil {
		return err
	}
	defer rs.stop()
	written := make(chan error, 1)
	go func() { written <- writeRows(ctx, db, ob, topic, rows, nKeys) }()
	kills, err := rs.killUntilDrained(ctx, db, ob, minKills, written)
	if err != nil {
		return err
	}
	return check(ctx, broker, topic, rows, kills, nRelays, start)
}

// relays are the relay processes, killed and restarted by killUntilDrained.
type relays struct {
	self, table string
	procs       []*exec.Cmd
}

func startRelays(table string, n int) (*relays, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	rs := &relays{self: self, table: table, procs: make([]*exec.Cmd, n)}
	for i := range rs.procs {
		if err := rs.start(i); err != nil {
			rs.stop()
			return nil, err
		}
	}
	return rs, nil
}

func (rs *relays) start(i int) error {
	c := exec.Command(rs.self, "-role", "relay", "-table", rs.table)
	c.Stdout, c.Stderr = os.Stderr, os.Stderr
	if err := c.Start(); err != nil {
		return err
	}
	rs.procs[i] = c
	return nil
}

func (rs *relays) stop() {
	for _, c := range rs.procs {
		if c != nil && c.Process != nil {
			_ = c.Process.Signal(syscall.SIGTERM)
			_ = c.Wait()
		}
	}
}

// killUntilDrained SIGKILLs a random relay at random moments (restarting
// it) until it did so minKills times and the writer is done, then waits
// until no row is pending. It returns the number of kills.
func (rs *relays) killUntilDrained(ctx context.Context, db *sql.DB, ob *outbox.Outbox, minKills int, written <-chan error) (int, error) {
	kills, writerDone := 0, false
	for {
		select {
		case <-ctx.Done():
			return kills, fmt.Errorf("timed out after %d kills: %w", kills, ctx.Err())
		case err := <-written:
			if err != nil {
				return kills, fmt.Errorf("writer: %w", err)
			}
			writerDone = true
		case <-time.After(time.Duration(150+rand.IntN(700)) * time.Millisecond):
		}
		if kills < minKills || !writerDone {
			i := rand.IntN(len(rs.procs))
			_ = rs.procs[i].Process.Signal(syscall.SIGKILL)
			_ = rs.procs[i].Wait()
			kills++
			if err := rs.start(i); err != nil {
				return kills, err
			}
			continue
		}
		st, err := ob.Stats(ctx, db)
		if err != nil {
			return kills, err
		}
		if st.Pending == 0 {
			return kills, nil
		}
	}
}

// writeRows writes rows rows over nKeys keys, in transactions of 50
// spread over the run, each key's payloads numbered from 1.
func writeRows(ctx context.Context, db *sql.DB, ob *outbox.Outbox, topic string, rows, nKeys int) error {
	seq := map[string]int{}
	for i := 0; i < rows; i += 50 {
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		for j := i; j < min(i+50, rows); j++ {
			k := fmt.Sprintf("k%d", j%nKeys)
			seq[k]++
			env, err := babelqueue.Make("urn:babel:outbox:kill", payload{Key: k, Seq: seq[k]}, babelqueue.WithQueue(topic))
			if err == nil {
				_, err = ob.WriteEnvelope(ctx, tx, env, []byte(k), nil)
			}
			if err != nil {
				_ = tx.Rollback()
				return err
			}
		}
		if err := tx.Commit(); err != nil {
			return err
		}
		time.Sleep(40 * time.Millisecond)
	}
	return nil
}

// check reads the topic back, prints the outbox-kill line and fails when
// a row is lost or a key's payloads come out of order (duplicates of an
// earlier message are counted, not checked).
func check(ctx context.Context, broker, topic string, rows, kills, nRelays int, start time.Time) error {
	values, err := integration.ReadAll(ctx, broker, topic, rows*3, 5*time.Second)
	if err != nil {
		return fmt.Errorf("read back: %w", err)
	}
	seen := map[string]bool{}
	last := map[string]int{}
	dups, violations := 0, 0
	for _, v := range values {
		env, err := babelqueue.Decode(v)
		if err != nil {
			return fmt.Errorf("read back: %w", err)
		}
		var p payload
		if err := env.BindData(&p); err != nil {
			return err
		}
		if seen[env.Meta.ID] {
			dups++
			continue
		}
		seen[env.Meta.ID] = true
		if p.Seq != last[p.Key]+1 {
			violations++
		}
		last[p.Key] = p.Seq
	}
	lost := rows - len(seen)
	fmt.Printf("outbox-kill: rows=%d kills=%d relays=%d published=%d distinct=%d lost=%d duplicates=%d order_violations=%d took=%s\n",
		rows, kills, nRelays, len(values), len(seen), lost, dups, violations, time.Since(start).Round(time.Millisecond))
	if lost != 0 || violations != 0 {
		return fmt.Errorf("%d rows lost, %d order violations", lost, violations)
	}
	return nil
}

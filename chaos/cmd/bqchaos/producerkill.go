package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/babelqueue/babelqueue-go/chaos"
	babelqueue "github.com/babelqueue/babelqueue-go/core"
)

// The producer-kill scenario: a producer process (`bqchaos producer`)
// publishes N envelopes, recording each id durably before its publish
// ("I <id>") and its outcome after it ("A" acked, "U" unknown, "R"
// refused). The driver SIGKILLs it at random moments and starts it again;
// a new incarnation publishes every id without an intent record (the
// concurrent publishes record their intents out of order, so a kill can
// leave a gap below the highest id recorded). At the end the
// work topic is read back: every acked id must be stored (lost=0); the ids
// a kill left in flight (recorded, no outcome) may or may not be.

const producerLog = "producer.log"

// producerMain is one incarnation of the producer.
func producerMain(args []string) int {
	fs := flag.NewFlagSet("bqchaos producer", flag.ContinueOnError)
	broker := fs.String("broker", "", "kafka or pulsar")
	dir := fs.String("dir", "", "run directory")
	run := fs.String("run", "", "run id (the work topic is chaos-<run>)")
	n := fs.Int("n", 1000, "envelopes to publish in all incarnations")
	workers := fs.Int("workers", 4, "concurrent publishes")
	pause := fs.Duration("pause", 0, "pause of each worker after each publish")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	recs, err := readProducerLog(filepath.Join(*dir, producerLog))
	if err != nil {
		fmt.Fprintln(os.Stderr, "bqchaos producer:", err)
		return 1
	}
	j, err := chaos.OpenJournal(filepath.Join(*dir, producerLog))
	if err != nil {
		fmt.Fprintln(os.Stderr, "bqchaos producer:", err)
		return 1
	}
	defer j.Close()
	s, err := newSide(*broker, *run, log)
	if err != nil {
		fmt.Fprintln(os.Stderr, "bqchaos producer:", err)
		return 1
	}
	defer s.close()
	app, err := babelqueue.NewApp(s.transport(), babelqueue.WithDefaultQueue(s.workTopic()))
	if err != nil {
		fmt.Fprintln(os.Stderr, "bqchaos producer:", err)
		return 1
	}
	var (
		mu   sync.Mutex
		todo = unrecorded(recs, *run, *n)
		wg   sync.WaitGroup
		errs = make([]error, *workers)
	)
	for w := range *workers {
		wg.Go(func() {
			for {
				mu.Lock()
				if len(todo) == 0 {
					mu.Unlock()
					return
				}
				seq := todo[0]
				todo = todo[1:]
				mu.Unlock()
				id := chaos.ID(*run, seq)
				if err := j.Append("I " + id + "\n"); err != nil {
					errs[w] = err
					return
				}
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				_, err := app.Publish(ctx, URN, map[string]any{"seq": seq}, babelqueue.WithEnvelopeOptions(babelqueue.WithID(id)))
				cancel()
				kind := "A"
				switch {
				case errors.Is(err, babelqueue.ErrPublishUnknown):
					kind = "U"
				case err != nil:
					kind = "R"
				}
				if err := j.Append(kind + " " + id + "\n"); err != nil {
					errs[w] = err
					return
				}
				time.Sleep(*pause)
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		fmt.Fprintln(os.Stderr, "bqchaos producer:", err)
		return 1
	}
	return 0
}

// producerRecords is what the producer log holds.
type producerRecords struct {
	intent, acked, unknown, refused map[string]bool
}

// unrecorded returns, in order, the sequences below n whose id has no
// intent record yet: what an incarnation still has to publish.
func unrecorded(r *producerRecords, run string, n int) []int {
	var out []int
	for seq := range n {
		if !r.intent[chaos.ID(run, seq)] {
			out = append(out, seq)
		}
	}
	return out
}

// readProducerLog parses the producer log; a torn last line (a kill while
// writing) is ignored.
func readProducerLog(path string) (*producerRecords, error) {
	r := &producerRecords{intent: map[string]bool{}, acked: map[string]bool{}, unknown: map[string]bool{}, refused: map[string]bool{}}
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return r, nil
	}
	if err != nil {
		return nil, err
	}
	sc := bufio.NewScanner(strings.NewReader(string(b)))
	complete := strings.HasSuffix(string(b), "\n")
	lines := []string{}
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	if !complete && len(lines) > 0 {
		lines = lines[:len(lines)-1]
	}
	for _, l := range lines {
		kind, id, ok := strings.Cut(l, " ")
		if !ok {
			continue
		}
		switch kind {
		case "I":
			r.intent[id] = true
		case "A":
			r.acked[id] = true
		case "U":
			r.unknown[id] = true
		case "R":
			r.refused[id] = true
		}
	}
	return r, nil
}

// producerKillMain is the driver of the producer-kill scenario.
func producerKillMain(args []string) int {
	fs := flag.NewFlagSet("bqchaos producer-kill", flag.ContinueOnError)
	broker := fs.String("broker", "", "kafka or pulsar")
	n := fs.Int("n", 2000, "envelopes to publish")
	kills := fs.Int("kills", 8, "SIGKILLs of the producer")
	duration := fs.Duration("duration", 40*time.Second, "span the kills are drawn over")
	dir := fs.String("dir", "", "run directory (default: a new temporary one, removed after a passing run)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	ctx, cancel := context.WithTimeout(context.Background(), *duration+5*time.Minute)
	defer cancel()
	return inRunDir(*dir, "bqchaos-producer-", "producer-kill", "records", func(dir string) (int, error) {
		return producerKill(ctx, *broker, dir, *n, *kills, *duration, log)
	})
}

// inRunDir runs a scenario in dir, or in a new temporary directory (named
// with prefix) when dir is empty, which is removed after a passing run (exit
// code 0). A scenario error is printed with where its kept files (what)
// are, and gives exit code 1.
func inRunDir(dir, prefix, scenario, what string, run func(dir string) (int, error)) int {
	temp := dir == ""
	if temp {
		d, err := os.MkdirTemp("", prefix)
		if err != nil {
			fmt.Fprintln(os.Stderr, "bqchaos:", err)
			return 1
		}
		dir = d
	}
	code, err := run(dir)
	if err != nil {
		fmt.Fprintf(os.Stderr, "bqchaos: %s: %v (%s in %s)\n", scenario, err, what, dir)
		return 1
	}
	if code == 0 && temp {
		_ = os.RemoveAll(dir)
	}
	return code
}

func producerKill(ctx context.Context, broker, dir string, n, kills int, duration time.Duration, log *slog.Logger) (int, error) {
	if err := os.MkdirAll(filepath.Join(dir, "logs"), 0o755); err != nil {
		return 1, err
	}
	run := fmt.Sprintf("p%x", time.Now().UnixNano()/1e6)
	s, err := newSide(broker, run, log)
	if err != nil {
		return 1, err
	}
	defer s.close()
	if err := s.provision(ctx); err != nil {
		return 1, err
	}
	self, err := os.Executable()
	if err != nil {
		return 1, err
	}
	rnd := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 7))
	start := func(inc int) (*exec.Cmd, chan error, error) {
		logf, err := os.Create(filepath.Join(dir, "logs", fmt.Sprintf("producer.%d.log", inc)))
		if err != nil {
			return nil, nil, err
		}
		// Paced so that the publishes span about 1.5 times the kill phase.
		pause := 4 * 3 * duration / 2 / time.Duration(n)
		cmd := exec.Command(self, "producer", "-broker", broker, "-dir", dir, "-run", run, "-n", strconv.Itoa(n), "-pause", pause.String())
		cmd.Stdout, cmd.Stderr = logf, logf
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
		if err := cmd.Start(); err != nil {
			logf.Close()
			return nil, nil, err
		}
		done := make(chan error, 1)
		go func() { done <- cmd.Wait(); logf.Close() }()
		return cmd, done, nil
	}
	// The kills fall within the first duration of the publishes, which
	// span about 1.5 times it, so the producer always has work left.
	killAt := killMoments(rnd, kills, 0, duration)
	inc, killed := 1, 0
	cmd, done, err := start(inc)
	if err != nil {
		return 1, err
	}
	began := time.Now()
	for killed < kills {
		wait := time.Until(began.Add(killAt[killed]))
		select {
		case err := <-done:
			return 1, fmt.Errorf("the producer ended before kill %d (raise -n): %v", killed+1, err)
		case <-ctx.Done():
			return 1, ctx.Err()
		case <-time.After(wait):
		}
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-done
		killed++
		log.Info("producer killed", "kill", killed)
		sleepCtx(ctx, time.Duration(200+rnd.IntN(800))*time.Millisecond)
		inc++
		if cmd, done, err = start(inc); err != nil {
			return 1, err
		}
	}
	select {
	case err := <-done:
		if err != nil {
			return 1, fmt.Errorf("the last producer: %w", err)
		}
	case <-ctx.Done():
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		return 1, ctx.Err()
	}

	recs, err := readProducerLog(filepath.Join(dir, producerLog))
	if err != nil {
		return 1, err
	}
	stored, err := storedIDs(ctx, s)
	if err != nil {
		return 1, err
	}
	lost, inFlight, inFlightStored, dups, refusedStored := 0, 0, 0, 0, 0
	for id := range recs.intent {
		switch {
		case recs.acked[id]:
			if stored[id] == 0 {
				lost++
			}
		case recs.unknown[id]:
		case recs.refused[id]:
			if stored[id] > 0 {
				refusedStored++
			}
		default:
			inFlight++
			if stored[id] > 0 {
				inFlightStored++
			}
		}
	}
	for _, c := range stored {
		dups += max(c-1, 0)
	}
	fmt.Printf("chaos: broker=%s scenario=producer-kill produced=%d acked=%d unknown=%d in_flight_stored=%d lost=%d duplicates=%d kills=%d\n",
		broker, len(recs.intent), len(recs.acked), len(recs.unknown), inFlightStored, lost, dups, killed)
	fmt.Fprintf(os.Stderr, "chaos detail: scenario=producer-kill in_flight=%d refused=%d refused_stored=%d stored_records=%d\n",
		inFlight, len(recs.refused), refusedStored, sum(stored))
	if lost != 0 || refusedStored != 0 || len(recs.intent) != n {
		return 1, nil
	}
	return 0, nil
}

func sum(m map[string]int) int {
	t := 0
	for _, v := range m {
		t += v
	}
	return t
}

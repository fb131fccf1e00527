package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	pulsarclient "github.com/apache/pulsar-client-go/pulsar"
	"github.com/babelqueue/babelqueue-go/chaos"
	babelqueue "github.com/babelqueue/babelqueue-go/core"
	"github.com/babelqueue/babelqueue-go/core/driver"
	"github.com/babelqueue/babelqueue-go/core/redrive"
	"github.com/babelqueue/babelqueue-go/core/wire"
)

// The redrive scenarios: a DLQ seeded with N dead letters is redriven to
// the work topic by a redriver process (`bqchaos redriver`: the library
// Redrive, paced), which the driver SIGKILLs K times at random moments
// (redrive-kill) while the broker is killed with -9 and started again once;
// with -kills 0 only the broker restart interrupts it (redrive-restart),
// and the broker is killed with -9 once more right after the redrive ended
// cleanly, before a last redriver run (-kill-after-end). A redriver that
// fails is started again. At the end every dead letter must
// be in the work topic exactly once: the redrive contract promises no loss
// and no duplicate.

// redriverMain is one incarnation of the redriver.
func redriverMain(args []string) int {
	fs := flag.NewFlagSet("bqchaos redriver", flag.ContinueOnError)
	broker := fs.String("broker", "", "kafka or pulsar")
	run := fs.String("run", "", "run id (the work topic is chaos-<run>)")
	pause := fs.Duration("item-pause", 0, "pause after each examined dead letter (paces the run)")
	poll := fs.Duration("poll", time.Second, "how long the redrive waits for another dead letter before it ends")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	s, err := newSide(*broker, *run, log)
	if err != nil {
		fmt.Fprintln(os.Stderr, "bqchaos redriver:", err)
		return 1
	}
	defer s.close()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	res, err := redrive.Run(ctx, s.transport(), s.dlq(), redrive.WithPollTimeout(*poll),
		redrive.WithProgress(nil, func(redrive.Item) { time.Sleep(*pause) }))
	fmt.Fprintf(os.Stderr, "redrive: examined=%d moved=%d recovered=%d resumed=%v err=%v\n", res.Examined, res.Moved, res.Recovered, res.Resumed, err)
	if err != nil {
		return 1
	}
	return 0
}

// seedDeadLetters publishes n dead letters of the work topic to its DLQ,
// with ids chaos.ID(run, i), from 8 goroutines.
func seedDeadLetters(ctx context.Context, s side, run string, n int) error {
	tr := s.transport()
	var next int
	var mu sync.Mutex
	errs := make([]error, 8)
	var wg sync.WaitGroup
	for w := range errs {
		wg.Go(func() {
			for {
				mu.Lock()
				i := next
				next++
				mu.Unlock()
				if i >= n {
					return
				}
				env, err := babelqueue.Make(URN, map[string]any{"seq": i}, babelqueue.WithID(chaos.ID(run, i)), babelqueue.WithQueue(s.workTopic()))
				if err == nil {
					var raw []byte
					if raw, err = env.Encode(); err == nil {
						msg := "always fails"
						raw, err = wire.AnnotateDeadLetter(raw, wire.DeadLetter{Reason: wire.ReasonFailed, Error: &msg,
							FailedAt: time.Now().UnixMilli(), OriginalQueue: s.workTopic(), Attempts: 4})
					}
					if err == nil {
						pctx, cancel := context.WithTimeout(ctx, 15*time.Second)
						_, err = tr.Send(pctx, &driver.Outgoing{Intent: driver.IntentPublish, Queue: s.dlq(), Body: string(raw)})
						cancel()
					}
				}
				if err != nil {
					errs[w] = fmt.Errorf("seed dead letter %d: %w", i, err)
					return
				}
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// redriveChaosMain is the driver of redrive-kill and redrive-restart.
func redriveChaosMain(args []string) int {
	fs := flag.NewFlagSet("bqchaos redrive-chaos", flag.ContinueOnError)
	broker := fs.String("broker", "", "kafka or pulsar")
	n := fs.Int("n", 2000, "dead letters to seed and redrive")
	kills := fs.Int("kills", 6, "SIGKILLs of the redriver (0: only the broker restart interrupts it)")
	duration := fs.Duration("duration", 30*time.Second, "span the kills and the broker restart fall in (the redrive is paced to last about that long)")
	scripts := fs.String("scripts", "tools/brokers", "directory of the broker scripts (kafka.sh, pulsar.sh)")
	dir := fs.String("dir", "", "directory for the redriver logs (default: a new temporary one, removed after a passing run)")
	afterEnd := fs.String("kill-after-end", "auto", "kill -9 the broker again right after the redrive ended cleanly, then run the redriver once more: auto (yes with -kills 0), yes, no")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	var killAfterEnd bool
	switch *afterEnd {
	case "auto":
		killAfterEnd = *kills == 0
	case "yes", "no":
		killAfterEnd = *afterEnd == "yes"
	default:
		fmt.Fprintln(os.Stderr, "bqchaos redrive-chaos: -kill-after-end is auto, yes or no")
		return 2
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	ctx, cancel := context.WithTimeout(context.Background(), *duration+12*time.Minute)
	defer cancel()
	return inRunDir(*dir, "bqchaos-redrive-", "redrive", "logs", func(dir string) (int, error) {
		return redriveChaos(ctx, *broker, dir, filepath.Join(*scripts, *broker+".sh"), *n, *kills, *duration, killAfterEnd, log)
	})
}

func redriveChaos(ctx context.Context, broker, dir, script string, n, kills int, duration time.Duration, killAfterEnd bool, log *slog.Logger) (int, error) {
	run := fmt.Sprintf("d%x", time.Now().UnixNano()/1e6)
	s, err := newSide(broker, run, log)
	if err != nil {
		return 1, err
	}
	defer s.close()
	if err := s.provision(ctx); err != nil {
		return 1, err
	}
	if err := seedDeadLetters(ctx, s, run, n); err != nil {
		return 1, err
	}
	log.Info("seeded the DLQ", "dead_letters", n)
	// Pulsar keeps a topic's messages only for its subscriptions: without
	// one, the ledgers of the work topic may be dropped when the broker
	// restarts (in a first run, 700 copies acknowledged before the kill
	// were gone after it). A durable audit subscription, never consumed,
	// keeps them, as the consumers' subscription does in a deployment.
	if p, ok := s.(*pulsarSide); ok {
		if err := p.auditWorkTopic(ctx); err != nil {
			return 1, err
		}
	}
	self, err := os.Executable()
	if err != nil {
		return 1, err
	}
	pause := duration / time.Duration(n)
	inc := 0
	start := func() (*exec.Cmd, chan error, error) {
		inc++
		logf, err := os.Create(filepath.Join(dir, fmt.Sprintf("redriver.%d.log", inc)))
		if err != nil {
			return nil, nil, err
		}
		cmd := exec.Command(self, "redriver", "-broker", broker, "-run", run, "-item-pause", pause.String())
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
	rnd := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 11))
	moments := make([]time.Duration, kills)
	for i := range moments {
		moments[i] = time.Duration(rnd.Int64N(int64(duration)))
	}
	restartAt := duration * 2 / 5
	began := time.Now()
	cmd, done, err := start()
	if err != nil {
		return 1, err
	}
	killed, crashes, restarted, finished := 0, 0, false, false
	var down time.Duration
	for !finished || time.Since(began) < duration {
		if time.Since(began) > duration+8*time.Minute {
			return 1, errors.New("the redrive did not finish")
		}
		select {
		case err := <-done:
			if err == nil && time.Since(began) >= duration && restarted {
				finished = true
				continue
			}
			if err != nil {
				crashes++
			}
			sleepCtx(ctx, time.Second)
			if cmd, done, err = start(); err != nil {
				return 1, err
			}
			continue
		case <-time.After(100 * time.Millisecond):
		case <-ctx.Done():
			return 1, ctx.Err()
		}
		el := time.Since(began)
		if !restarted && el >= restartAt {
			restarted = true
			t0 := time.Now()
			if err := runScript(ctx, script, "kill", time.Minute); err != nil {
				return 1, err
			}
			sleepCtx(ctx, time.Duration(2000+rnd.IntN(3000))*time.Millisecond)
			if err := runScript(ctx, script, "start", 5*time.Minute); err != nil {
				return 1, err
			}
			down = time.Since(t0)
			log.Info("broker restarted", "down", down.Round(100*time.Millisecond))
			began = began.Add(down) // the remaining kills keep their spacing
			continue
		}
		for i, m := range moments {
			if m >= 0 && el >= m {
				moments[i] = -1
				_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
				<-done
				killed++
				sleepCtx(ctx, time.Duration(200+rnd.IntN(1800))*time.Millisecond)
				if cmd, done, err = start(); err != nil {
					return 1, err
				}
				break
			}
		}
	}
	restarts := 1
	var downAfter time.Duration
	afterEnd := "-"
	if killAfterEnd {
		// The window a clean end leaves: the broker may forget the
		// acknowledgements of the last batches (confirmed seconds ago, the
		// redriver's last poll), and deliver those dead letters again to
		// the next run, which must not copy them a second time.
		restarts++
		t0 := time.Now()
		if err := runScript(ctx, script, "kill", time.Minute); err != nil {
			return 1, err
		}
		sleepCtx(ctx, time.Duration(2000+rnd.IntN(3000))*time.Millisecond)
		if err := runScript(ctx, script, "start", 5*time.Minute); err != nil {
			return 1, err
		}
		downAfter = time.Since(t0)
		log.Info("broker restarted after the clean end", "down", downAfter.Round(100*time.Millisecond))
		for attempt := 1; ; attempt++ {
			if cmd, done, err = start(); err != nil {
				return 1, err
			}
			var werr error
			select {
			case werr = <-done:
			case <-ctx.Done():
				_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
				return 1, ctx.Err()
			}
			if werr == nil {
				afterEnd = redriverSummary(filepath.Join(dir, fmt.Sprintf("redriver.%d.log", inc)))
				break
			}
			crashes++
			if attempt == 30 {
				return 1, errors.New("the redrive after the clean end did not finish")
			}
			sleepCtx(ctx, 2*time.Second)
		}
	}
	stored, err := storedIDs(ctx, s)
	if err != nil {
		return 1, err
	}
	redriven, dups := 0, 0
	for i := range n {
		c := stored[chaos.ID(run, i)]
		if c > 0 {
			redriven++
		}
		dups += max(c-1, 0)
	}
	scenario := "redrive-kill"
	if kills == 0 {
		scenario = "redrive-restart"
	}
	fmt.Printf("chaos: broker=%s scenario=%s dead_lettered=%d redriven=%d lost=%d duplicates=%d kills=%d broker_restarts=%d\n",
		broker, scenario, n, redriven, n-redriven, dups, killed, restarts)
	fmt.Fprintf(os.Stderr, "chaos detail: scenario=%s redriver_runs=%d crashes=%d broker_down=%s broker_down_after_end=%s after_end_run=%q stored_records=%d\n",
		scenario, inc, crashes, down.Round(100*time.Millisecond), downAfter.Round(100*time.Millisecond), afterEnd, sum(stored))
	if redriven != n || dups != 0 {
		return 1, nil
	}
	return 0, nil
}

// redriverSummary returns the result line a redriver wrote to its log
// ("examined=.. moved=.. recovered=.."): after the clean end, recovered
// counts the dead letters the broker delivered again and the run
// acknowledged without a copy.
func redriverSummary(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "redrive: "); ok {
			return rest
		}
	}
	return "no result line"
}

// auditWorkTopic creates the durable subscription chaos-audit on the work
// topic, at its start, and leaves it unconsumed.
func (p *pulsarSide) auditWorkTopic(ctx context.Context) error {
	cons, err := p.subscribeAudit(ctx, p.topic, pulsarclient.Shared)
	if err != nil {
		return err
	}
	cons.Close()
	return nil
}

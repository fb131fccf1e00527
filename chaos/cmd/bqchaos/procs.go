package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sync"
	"syscall"
	"time"

	"github.com/babelqueue/babelqueue-go/chaos"
)

// slot is a process role (consumer-1, consumer-2, reinjector) whose
// incarnations the driver starts, kills and restarts. Every incarnation
// runs in its own process group and dies with the driver (Pdeathsig).
type slot struct {
	name string
	argv func(proc string) []string // command line of an incarnation

	sup *supervisor

	mu       sync.Mutex
	inc      int
	cmd      *exec.Cmd
	proc     string
	exited   chan struct{}
	stopping bool // the driver asked this incarnation to stop
}

// supervisor owns the slots, the event journal and the log directory.
type supervisor struct {
	dir    string
	events *chaos.Journal
	log    *slog.Logger

	mu       sync.Mutex
	slots    []*slot
	crashes  int
	closed   bool
	restarts sync.WaitGroup
}

func (s *supervisor) add(name string, argv func(proc string) []string) *slot {
	sl := &slot{name: name, argv: argv, sup: s}
	s.mu.Lock()
	s.slots = append(s.slots, sl)
	s.mu.Unlock()
	return sl
}

func (s *supervisor) event(kind chaos.EventKind, proc string) {
	e := chaos.Event{At: time.Now(), Kind: kind, Proc: proc}
	if err := s.events.Append(e.Line()); err != nil {
		s.log.Error("event journal", "err", err)
	}
}

// start starts a new incarnation of sl. The caller makes sure none runs.
func (sl *slot) start() error {
	sl.mu.Lock()
	defer sl.mu.Unlock()
	sl.sup.mu.Lock()
	closed := sl.sup.closed
	sl.sup.mu.Unlock()
	if closed {
		return errors.New("supervisor closed")
	}
	sl.inc++
	proc := fmt.Sprintf("%s.%d", sl.name, sl.inc)
	argv := sl.argv(proc)
	logf, err := os.OpenFile(filepath.Join(sl.sup.dir, "logs", proc+".log"), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("log of %s: %w", proc, err)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return fmt.Errorf("start %s: %w", proc, err)
	}
	sl.cmd, sl.proc, sl.stopping = cmd, proc, false
	exited := make(chan struct{})
	sl.exited = exited
	sl.sup.event(chaos.Start, proc)
	go func() {
		err := cmd.Wait()
		logf.Close()
		sl.mu.Lock()
		stopping := sl.stopping
		sl.mu.Unlock()
		close(exited)
		if !stopping {
			sl.sup.crashed(sl, proc, err)
		}
	}()
	return nil
}

// crashed handles an incarnation that exited without being asked: it is
// recorded as a crash and started again after a second (at most 50 times).
func (s *supervisor) crashed(sl *slot, proc string, err error) {
	s.event(chaos.Crash, proc)
	s.mu.Lock()
	s.crashes++
	n, closed := s.crashes, s.closed
	if !closed && n <= 50 {
		s.restarts.Add(1)
	}
	s.mu.Unlock()
	s.log.Warn("process exited on its own", "proc", proc, "err", err, "crashes", n)
	if closed || n > 50 {
		return
	}
	go func() {
		defer s.restarts.Done()
		time.Sleep(time.Second)
		if err := sl.start(); err != nil {
			s.log.Error("restart after crash", "slot", sl.name, "err", err)
		}
	}()
}

// signal sends sig to the running incarnation's process group and waits
// (up to wait) until it exited; it returns the incarnation's name, or ""
// when none was running. A process still alive after wait is killed.
func (sl *slot) signal(sig syscall.Signal, wait time.Duration) string {
	sl.mu.Lock()
	cmd, proc, exited := sl.cmd, sl.proc, sl.exited
	if cmd == nil || exited == nil {
		sl.mu.Unlock()
		return ""
	}
	select {
	case <-exited:
		sl.mu.Unlock()
		return ""
	default:
	}
	sl.stopping = true
	sl.mu.Unlock()
	_ = syscall.Kill(-cmd.Process.Pid, sig)
	select {
	case <-exited:
	case <-time.After(wait):
		sl.sup.log.Warn("process did not exit in time; killing it", "proc", proc, "signal", sig)
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-exited
	}
	return proc
}

// stopAll stops every incarnation (SIGTERM, SIGKILL after grace) without
// recording events, and refuses later starts.
func (s *supervisor) stopAll(grace time.Duration) {
	s.mu.Lock()
	s.closed = true
	slots := append([]*slot(nil), s.slots...)
	s.mu.Unlock()
	var wg sync.WaitGroup
	for _, sl := range slots {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sl.signal(syscall.SIGTERM, grace)
		}()
	}
	wg.Wait()
	s.restarts.Wait()
	for _, sl := range slots { // a restart that raced with closing
		sl.signal(syscall.SIGKILL, 5*time.Second)
	}
}

// sleepCtx sleeps d or until ctx ends; it reports whether d elapsed.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// killMoments draws n moments in [from, until), in order, for the kills
// of a chaos phase.
func killMoments(rnd *rand.Rand, n int, from, until time.Duration) []time.Duration {
	at := make([]time.Duration, n)
	for i := range at {
		at[i] = from + time.Duration(rnd.Int64N(int64(until-from)))
	}
	slices.Sort(at)
	return at
}

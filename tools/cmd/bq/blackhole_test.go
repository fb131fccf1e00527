package main

import (
	"bytes"
	"context"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// blackHole is a TCP listener that accepts connections and never answers:
// a frozen broker, or a wrong port that accepts.
type blackHole struct {
	ln    net.Listener
	mu    sync.Mutex
	conns []net.Conn
	done  chan struct{}
}

func newBlackHole(t *testing.T) *blackHole {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	b := &blackHole{ln: ln, done: make(chan struct{})}
	go func() {
		defer close(b.done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			b.mu.Lock()
			b.conns = append(b.conns, c) // held open, never read or written
			b.mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		<-b.done
		b.mu.Lock()
		for _, c := range b.conns {
			c.Close()
		}
		b.mu.Unlock()
	})
	return b
}

func (b *blackHole) addr() string { return b.ln.Addr().String() }

// buildBQ builds the bq binary once per test binary run.
var (
	buildOnce sync.Once
	builtBQ   string
	buildErr  error
)

func bqBinary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "bq-bin-")
		if err != nil {
			buildErr = err
			return
		}
		builtBQ = filepath.Join(dir, "bq")
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		out, err := exec.CommandContext(ctx, "go", "build", "-o", builtBQ, ".").CombinedOutput()
		if err != nil {
			buildErr = errors.New(string(out))
		}
	})
	if buildErr != nil {
		t.Fatalf("building bq: %v", buildErr)
	}
	return builtBQ
}

// runBinary runs bq with args and env, killed after limit; it returns
// the exit code, stderr and how long it ran. sigAfter > 0 sends SIGINT
// after that long.
func runBinary(t *testing.T, env []string, limit, sigAfter time.Duration, args ...string) (int, string, time.Duration) {
	t.Helper()
	bin := bqBinary(t) // built before the clock starts
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = append(os.Environ(), "BQ_KAFKA_BROKERS=", "BQ_PULSAR_URL=", "BQ_BROKER=", "BQ_PULSAR_ADMIN_URL=")
	cmd.Env = append(cmd.Env, env...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	cmd.Stdin = strings.NewReader("{\"n\":1}\n")
	start := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if sigAfter > 0 {
		time.AfterFunc(sigAfter, func() { _ = cmd.Process.Signal(syscall.SIGINT) })
	}
	err := cmd.Wait()
	took := time.Since(start)
	if ctx.Err() != nil {
		t.Fatalf("bq %v still running after %v (killed); stderr %s", args, limit, stderr.String())
	}
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return code, stderr.String(), took
}

// blackHoleCommands are every broker command, with the flags each needs.
func blackHoleCommands() map[string][]string {
	return map[string][]string{
		"topics list":     {"topics", "list"},
		"topics describe": {"topics", "describe", "-t", "orders"},
		"topics ensure":   {"topics", "ensure", "-t", "orders"},
		"lag":             {"lag", "-g", "g", "-t", "orders"},
		"tail":            {"tail", "-q", "orders"},
		"publish":         {"publish", "-q", "orders", "-u", "urn:bq:x"},
		"publish --stdin": {"publish", "-q", "orders", "-u", "urn:bq:x", "--stdin"},
		"dlq stats":       {"dlq", "stats", "-q", "orders"},
		"dlq peek":        {"dlq", "peek", "-q", "orders"},
		"dlq discard":     {"dlq", "discard", "-q", "orders", "--all", "--dry-run"},
		"redrive":         {"redrive", "-q", "orders"},
		"reinject":        {"reinject", "-t", "orders", "--http", ""},
	}
}

// kafkaOnly are the commands that need Kafka.
var kafkaOnly = map[string]bool{"topics ensure": true, "reinject": true}

// TestBlackHoleEveryCommandExitsWithinItsTimeout runs every command of the
// built binary against a listener that accepts and never answers, with
// --dial-timeout 1s: each must exit with code 1 naming an unreachable
// broker, well within its timeout (no hang, whatever the broker call).
func TestBlackHoleEveryCommandExitsWithinItsTimeout(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary (-short)")
	}
	hole := newBlackHole(t)
	const dial = time.Second
	var report []string
	for _, kind := range []string{"kafka", "pulsar"} {
		for name, args := range blackHoleCommands() {
			if kind == "pulsar" && kafkaOnly[name] {
				continue
			}
			broker := hole.addr()
			if kind == "pulsar" {
				broker = "pulsar://" + hole.addr()
			}
			env := []string{"BQ_PULSAR_ADMIN_URL=http://" + hole.addr()}
			all := append(append([]string(nil), args...), "-b", broker, "--dial-timeout", dial.String(), "--timeout", dial.String())
			code, stderr, took := runBinary(t, env, 20*time.Second, 0, all...)
			if code != exitError {
				t.Errorf("%s %s: exit %d, want %d; stderr %s", kind, name, code, exitError, stderr)
			}
			if !strings.Contains(stderr, "unreachable") && !strings.Contains(stderr, "did not complete") {
				t.Errorf("%s %s: stderr does not name an unreachable broker: %s", kind, name, stderr)
			}
			if took > dial+time.Second {
				t.Errorf("%s %s: took %v with --dial-timeout %v", kind, name, took, dial)
			}
			report = append(report, kind+" "+name+": "+took.Round(10*time.Millisecond).String())
		}
	}
	sort.Strings(report)
	t.Logf("exit times against the black hole (--dial-timeout %v):\n%s", dial, strings.Join(report, "\n"))
}

// TestBlackHoleSIGINTStopsEveryCommand interrupts every command while it
// waits on the black hole with long timeouts: each must exit within 2 s
// of SIGINT, with the interrupted code.
func TestBlackHoleSIGINTStopsEveryCommand(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary (-short)")
	}
	hole := newBlackHole(t)
	const sigAfter = 500 * time.Millisecond
	var report []string
	for _, kind := range []string{"kafka", "pulsar"} {
		for name, args := range blackHoleCommands() {
			if kind == "pulsar" && kafkaOnly[name] {
				continue
			}
			broker := hole.addr()
			if kind == "pulsar" {
				broker = "pulsar://" + hole.addr()
			}
			env := []string{"BQ_PULSAR_ADMIN_URL=http://" + hole.addr()}
			all := append(append([]string(nil), args...), "-b", broker, "--dial-timeout", "60s", "--timeout", "60s")
			code, stderr, took := runBinary(t, env, 20*time.Second, sigAfter, all...)
			// tail and reinject end normally on a signal; the others were
			// interrupted before finishing.
			if code != exitInterrupted && code != exitOK {
				t.Errorf("%s %s: exit %d after SIGINT, want %d; stderr %s", kind, name, code, exitInterrupted, stderr)
			}
			if after := took - sigAfter; after > 2*time.Second {
				t.Errorf("%s %s: stopped %v after SIGINT, want within 2s", kind, name, after)
			}
			report = append(report, kind+" "+name+": "+(took-sigAfter).Round(10*time.Millisecond).String()+" after SIGINT")
		}
	}
	sort.Strings(report)
	t.Logf("stop times after SIGINT:\n%s", strings.Join(report, "\n"))
}

//go:build interop

package interop

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	kafkago "github.com/segmentio/kafka-go"

	"github.com/babelqueue/babelqueue-go/brokertest"
	"github.com/babelqueue/babelqueue-go/brokertest/kafkaread"
	babelqueue "github.com/babelqueue/babelqueue-go/core"
	"github.com/babelqueue/babelqueue-go/core/bqtest"
	"github.com/babelqueue/babelqueue-go/kafka"
)

// EnvPython names the Python interpreter of the peer's virtual environment
// (venv.sh prints the venv; make interop sets it to <venv>/bin/python).
const EnvPython = "BQ_INTEROP_PYTHON"

// summary counts the scenarios for the closing line TestMain prints.
var summary struct {
	mu             sync.Mutex
	passed, failed int
}

// TestMain runs the scenarios and prints "N passed, M failed".
func TestMain(m *testing.M) {
	code := m.Run()
	summary.mu.Lock()
	fmt.Printf("%d passed, %d failed\n", summary.passed, summary.failed)
	summary.mu.Unlock()
	os.Exit(code)
}

// scenario marks t as the interop scenario name: when the test and all its
// cleanups are done, one line "interop: <name> ok|FAIL ..." is printed.
// covers names the fault of issue 35 the scenario was written for ("" when
// none); a failure line repeats it.
func scenario(t *testing.T, name, covers string) {
	t.Helper()
	start := time.Now()
	t.Cleanup(func() {
		took := time.Since(start).Round(100 * time.Millisecond)
		summary.mu.Lock()
		defer summary.mu.Unlock()
		if t.Failed() {
			summary.failed++
			hint := ""
			if covers != "" {
				hint = " (" + covers + ")"
			}
			fmt.Printf("interop: %s FAIL in %v%s\n", name, took, hint)
			return
		}
		summary.passed++
		fmt.Printf("interop: %s ok in %v\n", name, took)
	})
	t.Parallel()
}

// mustEnv returns the variable or fails the test: interop scenarios never
// skip, since make interop starts everything they need.
func mustEnv(t testing.TB, name, how string) string {
	t.Helper()
	v := os.Getenv(name)
	if v == "" {
		t.Fatalf("%s is not set: %s (run make interop)", name, how)
	}
	return v
}

func kafkaBrokers(t testing.TB) []string {
	t.Helper()
	mustEnv(t, brokertest.EnvKafkaBrokers, "no Kafka broker")
	return brokertest.KafkaBrokers(t)
}

func pulsarURL(t testing.TB) string {
	t.Helper()
	mustEnv(t, "BQ_PULSAR_URL", "no Pulsar broker")
	return brokertest.PulsarURL(t)
}

func pythonBin(t testing.TB) string {
	t.Helper()
	p := mustEnv(t, EnvPython, "no Python peer venv; export "+EnvPython+"=$(interop/venv.sh)/bin/python")
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("%s=%s: %v", EnvPython, p, err)
	}
	return p
}

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// --- the Python peer ---------------------------------------------------------

// peer is one running peer.py command.
type peer struct {
	name   string
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	lines  chan []byte
	stderr *bqtest.SyncBuffer
	done   chan error
}

// startPeer starts `peer.py command spec`; its stdout lines arrive on
// p.lines. The process is killed at cleanup if still running.
func startPeer(t testing.TB, command string, spec any) *peer {
	t.Helper()
	arg, err := json.Marshal(spec)
	if err != nil {
		t.Fatal(err)
	}
	specArg := string(arg)
	if len(arg) > 32<<10 {
		// Linux bounds one argument to 128 KiB: a big spec goes in a file.
		f := filepath.Join(t.TempDir(), "spec.json")
		if err := os.WriteFile(f, arg, 0o600); err != nil {
			t.Fatal(err)
		}
		specArg = "@" + f
	}
	cmd := exec.Command(pythonBin(t), filepath.Join("peer", "peer.py"), command, specArg)
	p := &peer{name: command, cmd: cmd, lines: make(chan []byte, 4096), stderr: &bqtest.SyncBuffer{}, done: make(chan error, 1)}
	cmd.Stderr = p.stderr
	if p.stdin, err = cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start peer %s: %v", command, err)
	}
	go func() {
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 1<<20), 64<<20)
		for sc.Scan() {
			p.lines <- append([]byte(nil), sc.Bytes()...)
		}
		close(p.lines)
		p.done <- cmd.Wait()
	}()
	t.Cleanup(func() {
		_ = p.stdin.Close()
		select {
		case <-p.done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
		}
	})
	return p
}

// next decodes the peer's next line into v, failing after within.
func (p *peer) next(t testing.TB, within time.Duration, v any) {
	t.Helper()
	select {
	case line, ok := <-p.lines:
		if !ok {
			t.Fatalf("peer %s ended without the expected line; stderr:\n%s", p.name, p.stderr.String())
		}
		if err := json.Unmarshal(line, v); err != nil {
			t.Fatalf("peer %s line %q: %v", p.name, line, err)
		}
	case <-time.After(within):
		t.Fatalf("peer %s: no line within %v; stderr:\n%s", p.name, within, p.stderr.String())
	}
}

// wait stops the peer (closes its stdin) and returns its remaining lines,
// failing when it exits with an error or does not exit within within.
func (p *peer) wait(t testing.TB, within time.Duration) [][]byte {
	t.Helper()
	_ = p.stdin.Close()
	return p.finish(t, within)
}

// finish waits for the peer to end by itself (without closing stdin).
func (p *peer) finish(t testing.TB, within time.Duration) [][]byte {
	t.Helper()
	var rest [][]byte
	timeout := time.After(within)
	for {
		select {
		case line, ok := <-p.lines:
			if !ok {
				if err := <-p.done; err != nil {
					t.Fatalf("peer %s: %v; stderr:\n%s", p.name, err, p.stderr.String())
				}
				p.done <- nil // for the cleanup
				return rest
			}
			rest = append(rest, line)
		case <-timeout:
			t.Fatalf("peer %s did not exit within %v; stderr:\n%s", p.name, within, p.stderr.String())
		}
	}
}

// runPeer runs a peer command to its end and decodes every line into a T.
func runPeer[T any](t testing.TB, command string, spec any, within time.Duration) []T {
	t.Helper()
	lines := startPeer(t, command, spec).finish(t, within)
	return decodeLines[T](t, lines)
}

func decodeLines[T any](t testing.TB, lines [][]byte) []T {
	t.Helper()
	out := make([]T, 0, len(lines))
	for _, l := range lines {
		var v T
		if err := json.Unmarshal(l, &v); err != nil {
			t.Fatalf("peer line %q: %v", l, err)
		}
		out = append(out, v)
	}
	return out
}

// b64 is a byte string the peer sends as standard base64; JSON null is a
// nil slice and "" an empty, non-nil one.
type b64 []byte

func (b *b64) UnmarshalJSON(data []byte) error {
	if string(data) == "null" {
		*b = nil
		return nil
	}
	var s string
	if err := json.Unmarshal(data, &s); err != nil {
		return err
	}
	v, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		return err
	}
	if v == nil {
		v = []byte{}
	}
	*b = v
	return nil
}

func (b b64) MarshalJSON() ([]byte, error) {
	if b == nil {
		return []byte("null"), nil
	}
	return json.Marshal(base64.StdEncoding.EncodeToString(b))
}

// pyKafkaRecord is a record as confluent-kafka (librdkafka) read it.
type pyKafkaRecord struct {
	Topic         string       `json:"topic"`
	Partition     int          `json:"partition"`
	Offset        int64        `json:"offset"`
	Key           b64          `json:"key"`
	Value         b64          `json:"value"`
	Headers       [][2]*string `json:"headers"`
	TimestampType int          `json:"timestamp_type"`
	Timestamp     int64        `json:"timestamp"`
}

// headerList returns the headers in order as name=value strings.
func (r pyKafkaRecord) headerList(t testing.TB) []string {
	t.Helper()
	out := make([]string, 0, len(r.Headers))
	for _, h := range r.Headers {
		var name, value string
		if h[0] != nil {
			name = *h[0]
		}
		if h[1] != nil {
			v, err := base64.StdEncoding.DecodeString(*h[1])
			if err != nil {
				t.Fatal(err)
			}
			value = string(v)
		}
		out = append(out, name+"="+value)
	}
	return out
}

// pyDelivery is one delivery a Python consumer reported.
type pyDelivery struct {
	Record   json.RawMessage `json:"record"`
	Envelope map[string]any  `json:"envelope"`
	At       int64           `json:"at"`         // when the handler ran (ms)
	Settled  int64           `json:"settled_at"` // when the delivery was settled (ms)
}

// --- Kafka -------------------------------------------------------------------

func newKafka(t testing.TB, opts ...kafka.Option) *kafka.Transport {
	t.Helper()
	tr, err := kafka.New(append([]kafka.Option{kafka.WithBrokers(kafkaBrokers(t)...), kafka.WithLogger(quiet),
		kafka.WithMaxWaitTime(200 * time.Millisecond)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tr.Close() })
	return tr
}

// ensureTopics creates topic, its retry tiers (those tr was built with,
// LogAppendTime) and its DLQ.
func ensureTopics(t testing.TB, tr *kafka.Transport, topic string, partitions int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := tr.EnsureTopics(ctx, topic, partitions, 1); err != nil {
		t.Fatal(err)
	}
}

func newApp(t testing.TB, tr babelqueue.Transport, opts ...babelqueue.Option) *babelqueue.App {
	t.Helper()
	app, err := babelqueue.NewApp(tr, append([]babelqueue.Option{babelqueue.WithLogger(quiet),
		babelqueue.WithPollTimeout(200 * time.Millisecond), babelqueue.WithOnError(func(error) {}),
		babelqueue.WithOnWarning(func(error) {})}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return app
}

// runApp consumes queues with app until the test ends.
func runApp(t testing.TB, app *babelqueue.App, queues ...string) {
	t.Helper()
	bqtest.RunUntilCleanup(t, "Consume", 20*time.Second, func(ctx context.Context) error { return app.Consume(ctx, queues...) })
}

// runReinjector runs our re-injector over topic's tiers until the test ends.
func runReinjector(t testing.TB, tr *kafka.Transport, topics ...string) {
	t.Helper()
	r, err := tr.NewReinjector(topics...)
	if err != nil {
		t.Fatal(err)
	}
	bqtest.RunUntilCleanup(t, "Reinjector.Run", 20*time.Second, func(ctx context.Context) error { return r.Run(ctx) })
}

// readKafka reads every partition of topic from the start without a
// group until want records arrived (then settle more for extras) or within
// elapsed. Records come sorted by partition then offset.
func readKafka(t testing.TB, topic string, want int, within, settle time.Duration) []kafkago.Message {
	t.Helper()
	got := kafkaread.All(t, kafkaBrokers(t), topic, want, within, settle)
	if len(got) < want {
		t.Fatalf("%s holds %d records within %v, want %d", topic, len(got), within, want)
	}
	return got
}

// kafkaHeaderList returns a record's headers in order as name=value.
func kafkaHeaderList(hs []kafkago.Header) []string {
	out := make([]string, 0, len(hs))
	for _, h := range hs {
		out = append(out, h.Key+"="+string(h.Value))
	}
	return out
}

// contractHeaders is the Kafka header projection of body (CONTRACT.md 6), name=value in the order
// the Python SDK writes it.
func contractHeaders(t testing.TB, body []byte) []string {
	t.Helper()
	env, err := babelqueue.Decode(body)
	if err != nil {
		t.Fatalf("decode %s: %v", body, err)
	}
	return []string{
		"bq-job=" + env.Job,
		"bq-trace-id=" + env.TraceID,
		"bq-message-id=" + env.Meta.ID,
		fmt.Sprintf("bq-schema-version=%d", env.Meta.SchemaVersion),
		"bq-source-lang=" + env.Meta.Lang,
		fmt.Sprintf("bq-attempts=%d", env.Attempts),
	}
}

// recorder collects what a Go handler saw.
type recorder struct {
	mu   sync.Mutex
	seen []goDelivery
	ch   chan goDelivery
}

type goDelivery struct {
	env     *babelqueue.Envelope
	headers map[string]string
	at      time.Time
}

func newRecorder() *recorder { return &recorder{ch: make(chan goDelivery, 1024)} }

// handler records each delivery; fail decides per delivery whether to fail.
func (r *recorder) handler(fail func(env *babelqueue.Envelope) bool) babelqueue.Handler {
	return func(ctx context.Context, env *babelqueue.Envelope) error {
		d := goDelivery{env: env, headers: babelqueue.HeadersFromContext(ctx), at: time.Now()}
		r.mu.Lock()
		r.seen = append(r.seen, d)
		r.mu.Unlock()
		r.ch <- d
		if fail != nil && fail(env) {
			return errors.New("go handler failed")
		}
		return nil
	}
}

// await returns the next delivery that matches, failing after within.
func (r *recorder) await(t testing.TB, within time.Duration, match func(goDelivery) bool) goDelivery {
	t.Helper()
	timeout := time.After(within)
	for {
		select {
		case d := <-r.ch:
			if match(d) {
				return d
			}
		case <-timeout:
			t.Fatalf("no matching Go delivery within %v", within)
		}
	}
}

func (r *recorder) all() []goDelivery {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]goDelivery(nil), r.seen...)
}

var bqBuild struct {
	once sync.Once
	path string
	err  error
	out  []byte
}

// bq runs the bq binary built from tools/cmd/bq (once per test binary) and
// returns its stdout, failing on a non-zero exit.
func bq(t testing.TB, args ...string) string {
	t.Helper()
	bqBuild.once.Do(func() {
		dir, err := os.MkdirTemp("", "interop-bq-")
		if err != nil {
			bqBuild.err = err
			return
		}
		bqBuild.path = filepath.Join(dir, "bq")
		cmd := exec.Command("go", "build", "-o", bqBuild.path, "./tools/cmd/bq")
		cmd.Dir = ".."
		bqBuild.out, bqBuild.err = cmd.CombinedOutput()
	})
	if bqBuild.err != nil {
		t.Fatalf("build bq: %v\n%s", bqBuild.err, bqBuild.out)
	}
	var stdout, stderr bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bqBuild.path, args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("bq %s: %v\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), err, stdout.String(), stderr.String())
	}
	return stdout.String()
}

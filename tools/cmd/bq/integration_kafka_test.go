//go:build integration

package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	kafkago "github.com/segmentio/kafka-go"

	"github.com/babelqueue/babelqueue-go/brokertest"
	babelqueue "github.com/babelqueue/babelqueue-go/core"
	"github.com/babelqueue/babelqueue-go/core/bqtest"
	"github.com/babelqueue/babelqueue-go/core/wire"
	bqkafka "github.com/babelqueue/babelqueue-go/kafka"
)

// bq runs the command in process and returns stdout, stderr and the exit
// code.
func bq(t *testing.T, ctx context.Context, args ...string) (string, string, int) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := run(ctx, args, &out, &errOut)
	return out.String(), errOut.String(), code
}

func mustBQ(t *testing.T, ctx context.Context, args ...string) string {
	t.Helper()
	out, errOut, code := bq(t, ctx, args...)
	if code != exitOK {
		t.Fatalf("bq %s: exit %d\nstdout: %s\nstderr: %s", strings.Join(args, " "), code, out, errOut)
	}
	return out
}

// tailFollows starts `bq tail --json --limit 1` on queue, publishes urn to
// it every 500 ms until tail prints a line, and returns that line. The test
// fails when nothing is printed within, and tail's exit code is checked.
func tailFollows(t *testing.T, ctx context.Context, within time.Duration, broker, queue, urn string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, within)
	defer cancel()
	pr, pw := io.Pipe()
	done := make(chan int, 1)
	go func() {
		defer pw.Close()
		var errOut bytes.Buffer
		done <- run(ctx, []string{"tail", "--broker", broker, "--queue", queue, "--json", "--limit", "1"}, pw, &errOut)
	}()
	lines := make(chan string, 1)
	go func() {
		l, _ := bufio.NewReader(pr).ReadString('\n')
		lines <- l
		io.Copy(io.Discard, pr)
	}()
	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	var line string
	for line == "" {
		select {
		case <-tick.C:
			mustBQ(t, ctx, "publish", "--broker", broker, "--queue", queue, "--urn", urn)
		case line = <-lines:
		case <-ctx.Done():
			t.Fatal("following tail printed nothing")
		}
	}
	if code := <-done; code != exitOK {
		t.Errorf("tail --limit 1 exit %d", code)
	}
	return line
}

// sigkill sends SIGKILL to cmd's process and reports whether the error
// wait returns says the signal ended it, not an exit of its own.
func sigkill(t *testing.T, cmd *exec.Cmd, wait func() error) bool {
	t.Helper()
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	ee, ok := wait().(*exec.ExitError)
	return ok && !ee.Exited()
}

func kafkaURL(t *testing.T) string {
	return "kafka://" + strings.Join(brokertest.KafkaBrokers(t), ",")
}

func testKafkaConn(t *testing.T, ctx context.Context) *kafkaConn {
	t.Helper()
	u, err := parseBrokerURL(kafkaURL(t))
	if err != nil {
		t.Fatal(err)
	}
	cf := connFlags{dialTimeout: 10 * time.Second}
	k, err := cf.kafka(ctx, u)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// ensure creates topic (2 partitions), its DLQ and one 1s tier.
func ensure(t *testing.T, ctx context.Context, topic string) {
	t.Helper()
	mustBQ(t, ctx, "topics", "ensure", "--broker", kafkaURL(t), "--topic", topic, "--partitions", "2", "--tiers", "1s")
}

// seedDeadLetter is one dead letter to write to a DLQ.
type seedDeadLetter struct {
	key, urn, reason, queue string
	redrives                int
	raw                     []byte // an undecodable body instead of an envelope
}

// encode returns the body of the seeded dead letter, s.raw or an envelope
// with a dead_letter block (with errText as its error when not empty), and
// its contract headers, the redrive count last when set.
func (s seedDeadLetter) encode(t *testing.T, errText string) ([]byte, []wire.Header) {
	t.Helper()
	var headers []wire.Header
	body := s.raw
	if body == nil {
		env, err := babelqueue.Make(s.urn, map[string]string{"key": s.key}, babelqueue.WithQueue(s.queue))
		if err != nil {
			t.Fatal(err)
		}
		if body, err = env.Encode(); err != nil {
			t.Fatal(err)
		}
		dl := wire.DeadLetter{Reason: s.reason, FailedAt: time.Now().UnixMilli(), OriginalQueue: s.queue, Attempts: 3}
		if errText != "" {
			dl.Error = &errText
		}
		if body, err = wire.AnnotateDeadLetter(body, dl); err != nil {
			t.Fatal(err)
		}
		headers = wire.ProjectBody(body).Headers()
	}
	if s.redrives > 0 {
		headers = append(headers, wire.Header{Key: headerRedriveCount, Value: fmt.Sprint(s.redrives)})
	}
	return body, headers
}

// seedDLQ writes dead letters to dlq as a consumer would have: envelope
// with a dead_letter block, contract headers, key.
func seedDLQ(t *testing.T, ctx context.Context, dlq string, seeds []seedDeadLetter) {
	t.Helper()
	w := &kafkago.Writer{Addr: kafkago.TCP(brokertest.KafkaBrokers(t)...), Balancer: &kafkago.Hash{}, RequiredAcks: kafkago.RequireAll, BatchTimeout: time.Millisecond, Transport: &kafkago.Transport{}}
	defer w.Close()
	msgs := make([]kafkago.Message, 0, len(seeds))
	for _, s := range seeds {
		m := kafkago.Message{Topic: dlq, Key: []byte(s.key), Time: time.Now()}
		var headers []wire.Header
		m.Value, headers = s.encode(t, "boom")
		for _, h := range headers {
			m.Headers = append(m.Headers, kafkago.Header{Key: h.Key, Value: []byte(h.Value)})
		}
		msgs = append(msgs, m)
	}
	if err := w.WriteMessages(ctx, msgs...); err != nil {
		t.Fatalf("seed %s: %v", dlq, err)
	}
}

// readAll returns every record of topic now.
func readAll(t *testing.T, ctx context.Context, k *kafkaConn, topic string) []*record {
	t.Helper()
	var recs []*record
	if err := (kafkaScanner{k: k}).scan(ctx, topic, func(r *record) error { recs = append(recs, r); return nil }); err != nil {
		t.Fatalf("read %s: %v", topic, err)
	}
	return recs
}

// liveRegion returns the records of dlq at and after the redrive cursor
// (the default one, bq-redrive.<dlq>, unless group is given).
func liveRegion(t *testing.T, ctx context.Context, k *kafkaConn, dlq, group string) []*record {
	t.Helper()
	if group == "" {
		group = bqkafka.RedriveCursor(dlq)
	}
	parts, err := k.partitions(ctx, dlq)
	if err != nil {
		t.Fatal(err)
	}
	first, next, err := k.bounds(ctx, dlq, parts)
	if err != nil {
		t.Fatal(err)
	}
	res, err := k.client.OffsetFetch(ctx, &kafkago.OffsetFetchRequest{GroupID: group, Topics: map[string][]int{dlq: parts}})
	if err != nil {
		t.Fatal(err)
	}
	from := first
	for _, p := range res.Topics[dlq] {
		if p.CommittedOffset > from[p.Partition] {
			from[p.Partition] = p.CommittedOffset
		}
	}
	var recs []*record
	for _, p := range parts {
		if err := k.readRange(ctx, dlq, p, from[p], next[p], func(m kafkago.Message) error { recs = append(recs, kafkaRecord(m)); return nil }); err != nil {
			t.Fatal(err)
		}
	}
	return recs
}

// messageIDs counts the records of recs by meta.id ("" for undecodable).
func messageIDs(recs []*record) map[string]int {
	ids := map[string]int{}
	for _, r := range recs {
		id := ""
		if env, err := babelqueue.Decode(r.Value); err == nil {
			id = env.Meta.ID
		}
		ids[id]++
	}
	return ids
}

func TestKafkaPublishTailPeekStats(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	topic := brokertest.Topic(t, "bq")
	ensure(t, ctx, topic)
	// idempotent: the existing topic is left as it is, and the partition
	// count asked for but not there is reported (exit 1).
	out, errOut, code := bq(t, ctx, "topics", "ensure", "--broker", kafkaURL(t), "--topic", topic, "--partitions", "5", "--tiers", "1s", "--json")
	var ens []ensureResult
	if err := json.Unmarshal([]byte(out), &ens); err != nil || len(ens) != 1 || ens[0].Partition != 2 || ens[0].DLQ != topic+".dlq" || ens[0].Mismatch == "" {
		t.Fatalf("second ensure: %v %+v (%s)", err, ens, out)
	}
	if code != exitError || !strings.Contains(errOut, "another partition count") {
		t.Errorf("second ensure with another partition count: exit %d, stderr %q", code, errOut)
	}
	k := testKafkaConn(t, ctx)
	for _, tp := range []string{topic + ".retry.1", topic + ".dlq"} {
		parts, err := k.partitions(ctx, tp)
		if err != nil || len(parts) != 2 {
			t.Fatalf("%s: partitions %v, %v; want 2", tp, parts, err)
		}
	}

	var ids []string
	for i := range 3 {
		out := mustBQ(t, ctx, "publish", "--broker", kafkaURL(t), "--queue", topic, "--urn", "urn:bq:test:pub",
			"--data", fmt.Sprintf(`{"n":%d}`, i), "--header", "traceparent=00-abc-def-01", "--json")
		var res publishResult
		if err := json.Unmarshal([]byte(out), &res); err != nil || res.ID == "" {
			t.Fatalf("publish output %q: %v", out, err)
		}
		ids = append(ids, res.ID)
	}
	out = mustBQ(t, ctx, "tail", "--broker", kafkaURL(t), "--queue", topic, "--from-start", "--follow=false", "--json")
	seen := map[string]bool{}
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		var v recordView
		if err := json.Unmarshal(sc.Bytes(), &v); err != nil {
			t.Fatalf("tail line %q: %v", sc.Text(), err)
		}
		if v.URN != "urn:bq:test:pub" || v.DecodeError != "" {
			t.Errorf("tail view %+v", v)
		}
		hs := map[string]string{}
		for _, h := range v.Headers {
			hs[h.Key] = h.Value
		}
		if hs["traceparent"] != "00-abc-def-01" || hs["bq-message-id"] != v.ID || hs["bq-job"] != "urn:bq:test:pub" {
			t.Errorf("tail headers %v", hs)
		}
		seen[v.ID] = true
	}
	for _, id := range ids {
		if !seen[id] {
			t.Errorf("published id %s not tailed (output %s)", id, out)
		}
	}

	// Following tail prints a message published after it started.
	followed := tailFollows(t, ctx, 30*time.Second, kafkaURL(t), topic, "urn:bq:test:follow")
	if !strings.Contains(followed, "urn:bq:test:follow") {
		t.Errorf("followed line %q", followed)
	}

	dlq := topic + ".dlq"
	seedDLQ(t, ctx, dlq, []seedDeadLetter{
		{key: "k1", urn: "urn:a", reason: "failed", queue: topic},
		{key: "k2", urn: "urn:a", reason: "failed", queue: topic},
		{key: "k3", urn: "urn:b", reason: "unknown_urn", queue: topic},
		{key: "k4", raw: []byte("not json at all")},
	})
	out = mustBQ(t, ctx, "dlq", "stats", "--broker", kafkaURL(t), "--queue", topic, "--json")
	var st dlqStats
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		t.Fatal(err)
	}
	want := dlqStats{Topic: dlq, Total: 4, Undecodable: 1,
		ByReason:      map[string]int{"failed": 2, "unknown_urn": 1, "(none)": 1},
		ByURN:         map[string]int{"urn:a": 2, "urn:b": 1, "(undecodable)": 1},
		ByOriginQueue: map[string]int{topic: 3, "(unknown)": 1},
		ByAge:         map[string]int{"<1m": 4}}
	if fmt.Sprint(st) != fmt.Sprint(want) {
		t.Errorf("stats\n got %+v\nwant %+v", st, want)
	}
	out = mustBQ(t, ctx, "dlq", "peek", "--broker", kafkaURL(t), "--queue", topic, "--reason", "failed", "--json")
	n := 0
	sc = bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		var v recordView
		if err := json.Unmarshal(sc.Bytes(), &v); err != nil {
			t.Fatal(err)
		}
		if v.DeadLetter == nil || v.DeadLetter.Reason != "failed" || v.DeadLetter.OriginalQueue != topic || v.URN != "urn:a" || v.Envelope == nil {
			t.Errorf("peek view %+v", v)
		}
		n++
	}
	if n != 2 {
		t.Errorf("peek --reason failed showed %d, want 2:\n%s", n, out)
	}
	// Peeking consumed nothing.
	if got := len(readAll(t, ctx, k, dlq)); got != 4 {
		t.Errorf("DLQ holds %d records after peek/stats, want 4", got)
	}
	for _, args := range [][]string{
		{"tail", "--broker", kafkaURL(t), "--queue", topic + "-missing", "--from-start", "--follow=false"},
		{"dlq", "stats", "--broker", kafkaURL(t), "--queue", topic + "-missing"},
	} {
		if _, errOut, code := bq(t, ctx, args...); code != exitError || !strings.Contains(errOut, "-missing") {
			t.Errorf("%v on a missing topic: exit %d, stderr %q", args, code, errOut)
		}
	}
	text := mustBQ(t, ctx, "dlq", "peek", "--broker", kafkaURL(t), "--queue", topic, "--limit", "1")
	if !strings.Contains(text, "dead_letter: reason=") || !strings.Contains(text, "headers: bq-job=") {
		t.Errorf("text peek:\n%s", text)
	}
}

func TestKafkaSASLPublish(t *testing.T) {
	brokers, user, password := brokertest.KafkaSASL(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	topic := brokertest.Topic(t, "bq")
	t.Setenv("BQ_SASL_PASSWORD", password)
	url := "kafka://" + strings.Join(brokers, ",")
	mustBQ(t, ctx, "topics", "ensure", "--broker", url, "--sasl-mechanism", "scram-sha-256", "--sasl-user", user, "--topic", topic, "--tiers", "none")
	mustBQ(t, ctx, "publish", "--broker", url, "--sasl-mechanism", "scram-sha-512", "--sasl-user", user, "--queue", topic, "--urn", "urn:bq:sasl")
	out := mustBQ(t, ctx, "tail", "--broker", url, "--sasl-mechanism", "scram-sha-256", "--sasl-user", user, "--queue", topic, "--from-start", "--follow=false")
	if !strings.Contains(out, "urn: urn:bq:sasl") {
		t.Errorf("tail over SASL:\n%s", out)
	}
	t.Setenv("BQ_SASL_PASSWORD", "wrong")
	_, errOut, code := bq(t, ctx, "publish", "--broker", url, "--sasl-mechanism", "scram-sha-256", "--sasl-user", user, "--queue", topic, "--urn", "urn:bq:sasl", "--dial-timeout", "5s")
	if code != exitError || !strings.Contains(errOut, "refuses the SASL credentials") {
		t.Errorf("wrong password: exit %d, stderr %q", code, errOut)
	}
}

func TestKafkaRedriveSelectorsDryRunGuard(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	topic := brokertest.Topic(t, "bq")
	ensure(t, ctx, topic)
	other := brokertest.Topic(t, "bq-other")
	ensure(t, ctx, other)
	dlq := topic + ".dlq"
	seedDLQ(t, ctx, dlq, []seedDeadLetter{
		{key: "a1", urn: "urn:a", reason: "failed", queue: topic},
		{key: "a2", urn: "urn:a", reason: "failed", queue: topic},
		{key: "a3", urn: "urn:a", reason: "failed", queue: topic},
		{key: "b1", urn: "urn:b", reason: "unknown_urn", queue: topic},
		{key: "g1", urn: "urn:a", reason: "failed", queue: topic, redrives: 3},
		{key: "x1", raw: []byte{0xff, 0xfe}},
	})
	k := testKafkaConn(t, ctx)
	base := []string{"redrive", "--broker", kafkaURL(t), "--queue", topic, "--json"}

	// Dry run: reports, writes and commits nothing (exit 3: one record
	// would be held by the guard).
	out, errOut, code := bq(t, ctx, append(base, "--dry-run")...)
	if code != exitPartial {
		t.Fatalf("dry run exit %d, want %d (stderr %s)", code, exitPartial, errOut)
	}
	var rep redriveReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	if !rep.DryRun || rep.Examined != 6 || rep.Outcomes[outcomeWouldMove] != 4 || rep.Outcomes[outcomeUndecodable] != 1 {
		t.Errorf("dry run report %+v", rep)
	}
	if n := len(readAll(t, ctx, k, topic)); n != 0 {
		t.Fatalf("dry run wrote %d records to %s", n, topic)
	}

	// urn:a with the guard at 3: three move, one is guarded (exit 3).
	out, errOut, code = bq(t, ctx, append(base, "--urn", "urn:a", "--replay-bypass")...)
	if code != exitPartial {
		t.Fatalf("redrive exit %d, want %d (stderr %s)", code, exitPartial, errOut)
	}
	rep = redriveReport{}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Moved != 3 || rep.Outcomes[outcomeGuarded] != 1 || rep.Outcomes[outcomeUnselected] != 1 || len(rep.Guarded) != 1 || rep.Guarded[0].Count != 3 {
		t.Errorf("redrive report %+v", rep)
	}
	moved := readAll(t, ctx, k, topic)
	if len(moved) != 3 {
		t.Fatalf("%s holds %d records, want 3", topic, len(moved))
	}
	for _, r := range moved {
		env, err := babelqueue.Decode(r.Value)
		if err != nil {
			t.Fatal(err)
		}
		if env.DeadLetter != nil || env.Attempts != 0 || env.URN() != "urn:a" {
			t.Errorf("redriven envelope %s", r.Value)
		}
		if _, ok := wire.DeadLetterOf(r.Value); ok {
			t.Errorf("redriven body keeps dead_letter: %s", r.Value)
		}
		var data map[string]string
		if err := env.BindData(&data); err != nil || data["key"] != string(r.Key) {
			t.Errorf("key %q not kept for data %v", r.Key, data)
		}
		if v, _ := r.header(headerRedriveCount); v != "1" {
			t.Errorf("bq-redrive-count %q", v)
		}
		if v, _ := r.header(wire.HeaderReplayBypass); v != "true" {
			t.Errorf("bq-replay-bypass %q", v)
		}
		if v, _ := r.header(wire.HeaderAttempts); v != "0" {
			t.Errorf("bq-attempts %q", v)
		}
	}
	// The live region of the DLQ holds the three that stay, written back.
	live := liveRegion(t, ctx, k, dlq, "")
	if len(live) != 3 {
		t.Fatalf("DLQ live region holds %d, want 3", len(live))
	}
	for _, r := range live {
		if src, ok := r.header(headerRedriveSource); !ok || !strings.HasPrefix(src, dlq+"/") {
			t.Errorf("written-back record without its source: %v", r.Headers)
		}
	}
	// The same command again: the three are examined again, nothing moves
	// (exit 3: the guard still holds one).
	out, _, code = bq(t, ctx, append(base, "--urn", "urn:a", "--replay-bypass")...)
	rep = redriveReport{}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	if code != exitPartial || rep.Moved != 0 || rep.Examined != 3 || !rep.Resumed || rep.Cursor != "bq-redrive."+dlq {
		t.Errorf("second run: exit %d report %+v", code, rep)
	}
	if n := len(liveRegion(t, ctx, k, dlq, "")); n != 3 {
		t.Errorf("DLQ live region holds %d, want 3", n)
	}
	// Another selection, to another target, with --max: only b1 moves; the
	// records the first run moved are not moved again.
	out = mustBQ(t, ctx, "redrive", "--broker", kafkaURL(t), "--queue", topic, "--reason", "unknown_urn", "--target", other, "--max", "1", "--json")
	rep = redriveReport{}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Moved != 1 || rep.Targets[other] != 1 {
		t.Errorf("targeted report %+v", rep)
	}
	if recs := readAll(t, ctx, k, other); len(recs) != 1 || string(recs[0].Key) != "b1" {
		t.Errorf("%s holds %d records", other, len(recs))
	}
	// No selection and no guard: the guarded one moves (its fourth
	// redrive), the undecodable one stays; nothing is moved twice.
	out = mustBQ(t, ctx, "redrive", "--broker", kafkaURL(t), "--queue", topic, "--max-redrives", "0", "--json")
	rep = redriveReport{}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Moved != 1 || rep.Outcomes[outcomeUndecodable] != 1 {
		t.Errorf("unguarded run %+v", rep)
	}
	moved = readAll(t, ctx, k, topic)
	ids := messageIDs(append(moved, readAll(t, ctx, k, other)...))
	if len(moved) != 4 || len(ids) != 5 {
		t.Errorf("%s holds %d records, the targets %d messages; want 4 and 5", topic, len(moved), len(ids))
	}
	for id, n := range ids {
		if n != 1 {
			t.Errorf("message %s moved %d times", id, n)
		}
	}
	for _, r := range moved {
		if string(r.Key) == "g1" {
			if v, _ := r.header(headerRedriveCount); v != "4" {
				t.Errorf("g1 redrive count %q, want 4", v)
			}
		}
	}
	if live := liveRegion(t, ctx, k, dlq, ""); len(live) != 1 || string(live[0].Key) != "x1" {
		t.Errorf("DLQ live region holds %d, want x1 alone", len(live))
	}
	// dlq stats and peek read the live region; --all the whole topic.
	var st dlqStats
	if err := json.Unmarshal([]byte(mustBQ(t, ctx, "dlq", "stats", "--broker", kafkaURL(t), "--queue", topic, "--json")), &st); err != nil {
		t.Fatal(err)
	}
	if st.Total != 1 || st.Undecodable != 1 {
		t.Errorf("stats of the live region %+v, want x1 alone", st)
	}
	st = dlqStats{}
	if err := json.Unmarshal([]byte(mustBQ(t, ctx, "dlq", "stats", "--broker", kafkaURL(t), "--queue", topic, "--all", "--json")), &st); err != nil {
		t.Fatal(err)
	}
	if whole := len(readAll(t, ctx, k, dlq)); st.Total != whole || whole <= 6 {
		t.Errorf("stats --all counted %d, the topic holds %d (6 originals and their write-backs)", st.Total, whole)
	}
	peek := mustBQ(t, ctx, "dlq", "peek", "--broker", kafkaURL(t), "--queue", topic, "--json", "--limit", "0")
	if n := strings.Count(peek, "\n"); n != 1 || !strings.Contains(peek, `"key":"x1"`) {
		t.Errorf("peek of the live region shows %d records:\n%s", n, peek)
	}
}

// TestKafkaRedriveKilledAndResumed SIGKILLs the bq binary three times in
// the middle of a redrive where three dead letters in four move and the
// fourth stays (written back to the DLQ tail), then lets a run finish, and
// counts: every moved message once in the target, every other once in the
// DLQ's live region, the DLQ's originals untouched.
func TestKafkaRedriveKilledAndResumed(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	bin := bqBinary(t)
	topic := brokertest.Topic(t, "bq")
	ensure(t, ctx, topic)
	dlq := topic + ".dlq"
	const total = 400
	seeds := make([]seedDeadLetter, total)
	stay := map[string]bool{}
	for i := range seeds {
		seeds[i] = seedDeadLetter{key: fmt.Sprintf("key-%d", i), urn: "urn:bq:kill", reason: "failed", queue: topic}
		if i%10 == 0 {
			seeds[i].key = "" // unkeyed records too
		}
		if i%4 == 3 {
			seeds[i].urn = "urn:bq:stay"
		}
	}
	seedDLQ(t, ctx, dlq, seeds)
	k := testKafkaConn(t, ctx)
	before := readAll(t, ctx, k, dlq)
	if len(before) != total {
		t.Fatalf("DLQ holds %d, want %d", len(before), total)
	}
	for _, r := range before {
		if env, err := babelqueue.Decode(r.Value); err == nil && env.URN() == "urn:bq:stay" {
			stay[env.Meta.ID] = true
		}
	}
	args := []string{"redrive", "--broker", kafkaURL(t), "--queue", topic, "--urn", "urn:bq:kill", "--json"}

	// Kill the process three times at growing progress, then let it finish.
	// A run started right after a kill is refused until the killed run's
	// lock membership expires (about 6 s): it is started again.
	kills, refused := 0, 0
	for _, atLeast := range []int{30, 110, 200} {
		for started := false; !started; {
			var stderr bytes.Buffer
			cmd := exec.CommandContext(ctx, bin, args...)
			cmd.Stdout, cmd.Stderr = io.Discard, &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			exited := false
			for {
				_, next, err := k.bounds(ctx, topic, []int{0, 1})
				if err != nil {
					t.Fatal(err)
				}
				if int(next[0]+next[1]) >= atLeast {
					break
				}
				select {
				case err := <-done:
					if !strings.Contains(stderr.String(), "another redrive is running") {
						t.Fatalf("run ended before it was killed: %v (%s)", err, stderr.String())
					}
					refused, exited = refused+1, true
					time.Sleep(500 * time.Millisecond)
				case <-ctx.Done():
					t.Fatal("redrive made no progress")
				case <-time.After(5 * time.Millisecond):
					continue
				}
				break
			}
			if exited {
				continue // refused: start it again
			}
			started = true
			if sigkill(t, cmd, func() error { return <-done }) {
				kills++
			}
		}
	}
	if kills == 0 {
		t.Fatal("no run was killed mid-way; the test proves nothing")
	}
	var out []byte
	for {
		var stderr bytes.Buffer
		cmd := exec.CommandContext(ctx, bin, args...)
		cmd.Stderr = &stderr
		var err error
		if out, err = cmd.Output(); err == nil {
			break
		}
		if !strings.Contains(stderr.String(), "another redrive is running") || ctx.Err() != nil {
			t.Fatalf("final run: %v (%s)", err, stderr.String())
		}
		refused++
		time.Sleep(500 * time.Millisecond)
	}
	t.Logf("runs refused while a killed run's lock lasted: %d", refused)
	if refused == 0 {
		t.Error("no run was refused right after a kill: the killed run held no lock")
	}
	var rep redriveReport
	if err := json.Unmarshal(out, &rep); err != nil {
		t.Fatalf("final report %q: %v", out, err)
	}
	t.Logf("killed %d runs; final run: examined %d moved %d recovered %d kept %d", kills, rep.Examined, rep.Moved, rep.Recovered, rep.Kept)
	if !rep.Resumed {
		t.Error("the final run did not resume the cursor")
	}

	target := readAll(t, ctx, k, topic)
	ids := messageIDs(target)
	for id, n := range ids {
		if n != 1 || stay[id] {
			t.Errorf("message %s in the target %d times (stays: %t)", id, n, stay[id])
		}
	}
	if want := total - len(stay); len(target) != want || len(ids) != want {
		t.Errorf("target holds %d records of %d messages, want %d", len(target), len(ids), want)
	}
	live := messageIDs(liveRegion(t, ctx, k, dlq, ""))
	if len(live) != len(stay) {
		t.Errorf("DLQ live region holds %d messages, want the %d that stay", len(live), len(stay))
	}
	for id, n := range live {
		if n != 1 || !stay[id] {
			t.Errorf("message %s in the live region %d times (stays: %t)", id, n, stay[id])
		}
	}
	// The originals are untouched; the tail holds the written-back copies.
	after := map[string][]byte{}
	for _, r := range readAll(t, ctx, k, dlq) {
		after[fmt.Sprintf("%d/%d", r.Partition, r.Offset)] = r.Value
	}
	for _, r := range before {
		if v := after[fmt.Sprintf("%d/%d", r.Partition, r.Offset)]; !bytes.Equal(v, r.Value) {
			t.Fatalf("DLQ record %d/%d changed", r.Partition, r.Offset)
		}
	}
	if len(after) <= total {
		t.Errorf("DLQ holds %d records, want the %d originals and the written-back copies", len(after), total)
	}
	// And once more: nothing left to move.
	again, err := exec.CommandContext(ctx, bin, args...).Output()
	if err != nil {
		t.Fatal(err)
	}
	var rep2 redriveReport
	if err := json.Unmarshal(again, &rep2); err != nil || rep2.Moved != 0 || rep2.Examined != len(stay) {
		t.Errorf("rerun after completion: moved %d examined %d, %v", rep2.Moved, rep2.Examined, err)
	}
}

func TestKafkaReinject(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	topic := brokertest.Topic(t, "bq")
	ensure(t, ctx, topic)
	k := testKafkaConn(t, ctx)

	rctx, rcancel := context.WithCancel(ctx)
	defer rcancel()
	pr, pw := io.Pipe()
	done := make(chan int, 1)
	var errOut bqtest.SyncBuffer
	go func() {
		defer pw.Close()
		done <- run(rctx, []string{"reinject", "--broker", kafkaURL(t), "--topic", topic, "--tiers", "1s", "--group", "bq-reinject-" + topic, "--http", "127.0.0.1:0", "--backlog-interval", "1s"}, pw, &errOut)
	}()
	line, err := bufio.NewReader(pr).ReadString('\n')
	if err != nil {
		t.Fatalf("first line: %v (stderr %s)", err, errOut.String())
	}
	go io.Copy(io.Discard, pr)
	addr, ok := strings.CutPrefix(strings.TrimSpace(line), "BQ_REINJECT_HTTP=")
	if !ok {
		t.Fatalf("first line %q", line)
	}
	get := func(path string) (int, string) {
		resp, err := http.Get("http://" + addr + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := get("/healthz"); code != 200 || body != "ok\n" {
		t.Errorf("/healthz = %d %q", code, body)
	}

	w := &kafkago.Writer{Addr: kafkago.TCP(brokertest.KafkaBrokers(t)...), RequiredAcks: kafkago.RequireAll, BatchTimeout: time.Millisecond, Transport: &kafkago.Transport{}}
	defer w.Close()
	body := `{"job":"urn:bq:retry","trace_id":"t","data":{},"meta":{"id":"r-1","queue":"` + topic + `","lang":"go","schema_version":1,"created_at":1},"attempts":1}`
	err = w.WriteMessages(ctx, kafkago.Message{Topic: topic + ".retry.1", Key: []byte("rk"), Value: []byte(body), Time: time.Now(),
		Headers: []kafkago.Header{{Key: "bq-delay", Value: []byte("1000")}, {Key: "bq-original-topic", Value: []byte(topic)}, {Key: "bq-attempts", Value: []byte("1")}}})
	if err != nil {
		t.Fatal(err)
	}
	var got []*record
	for deadline := time.Now().Add(60 * time.Second); len(got) == 0; {
		if time.Now().After(deadline) {
			t.Fatalf("record not re-injected (stderr %s)", errOut.String())
		}
		time.Sleep(200 * time.Millisecond)
		got = readAll(t, ctx, k, topic)
	}
	if string(got[0].Value) != body || string(got[0].Key) != "rk" {
		t.Errorf("re-injected %q key %q", got[0].Value, got[0].Key)
	}
	if _, ok := got[0].header("bq-delay"); ok {
		t.Error("bq-delay kept")
	}
	_, metrics := get("/metrics")
	if !strings.Contains(metrics, fmt.Sprintf("bq_reinject_records_total{topic=%q} 1", topic)) || !strings.Contains(metrics, "bq_reinject_up 1") {
		t.Errorf("/metrics:\n%s", metrics)
	}
	// The backlog samples (every second) see the carried record committed:
	// a sample taken after it found nothing waiting in the tier.
	carried := time.Now()
	backlog := fmt.Sprintf("bq_reinject_backlog_records{tier=%q,queue=%q}", topic+".retry.1", topic)
	for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		_, metrics = get("/metrics")
		v, ok := metricValue(metrics, backlog)
		okv, _ := metricValue(metrics, fmt.Sprintf("bq_reinject_backlog_sample_ok{tier=%q}", topic+".retry.1"))
		at, _ := metricValue(metrics, fmt.Sprintf("bq_reinject_backlog_sample_time_seconds{tier=%q}", topic+".retry.1"))
		if ok && v == 0 && okv == 1 && at >= float64(carried.UnixMilli())/1000 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("backlog not sampled as empty:\n%s", metrics)
		}
	}
	if code, body := get("/healthz"); code != 200 {
		t.Errorf("/healthz after backlog samples = %d %q", code, body)
	}
	rcancel()
	select {
	case code := <-done:
		if code != exitOK {
			t.Errorf("reinject exit %d after cancel (stderr %s)", code, errOut.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatal("reinject did not stop")
	}
}

func TestKafkaReinjectStopsOnSIGTERM(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	bin := bqBinary(t)
	topic := brokertest.Topic(t, "bq")
	ensure(t, ctx, topic)
	cmd := exec.CommandContext(ctx, bin, "reinject", "--broker", kafkaURL(t), "--topic", topic, "--tiers", "1s", "--group", "bq-reinject-"+topic, "--http", "127.0.0.1:0")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bqtest.SyncBuffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		t.Fatalf("first line: %v (stderr %s)", err, stderr.String())
	}
	addr := strings.TrimPrefix(strings.TrimSpace(line), "BQ_REINJECT_HTTP=")
	resp, err := http.Get("http://" + addr + "/healthz")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("/healthz: %v %v", resp, err)
	}
	resp.Body.Close()
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("exit after SIGTERM: %v (stderr %s)", err, stderr.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatal("reinject did not stop on SIGTERM")
	}
	if !strings.Contains(stderr.String(), "bq reinject: stopped") {
		t.Errorf("stderr %q", stderr.String())
	}
}

// TestKafkaRedriveRate prints the redrive rate (records/s) of 500 dead
// letters; it asserts only that all of them moved.
func TestKafkaRedriveRate(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	topic := brokertest.Topic(t, "bq")
	ensure(t, ctx, topic)
	const total = 500
	seeds := make([]seedDeadLetter, total)
	for i := range seeds {
		seeds[i] = seedDeadLetter{key: fmt.Sprint(i), urn: "urn:bq:rate", reason: "failed", queue: topic}
	}
	seedDLQ(t, ctx, topic+".dlq", seeds)
	start := time.Now()
	out := mustBQ(t, ctx, "redrive", "--broker", kafkaURL(t), "--queue", topic, "--json")
	elapsed := time.Since(start)
	var rep redriveReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil || rep.Moved != total {
		t.Fatalf("report %+v %v", rep, err)
	}
	fmt.Printf("bench: kafka_redrive_records_per_second value=%.0f\n", float64(total)/elapsed.Seconds())
	start = time.Now()
	mustBQ(t, ctx, "dlq", "stats", "--broker", kafkaURL(t), "--queue", topic, "--json")
	fmt.Printf("bench: kafka_dlq_stats_records_per_second value=%.0f\n", float64(total)/time.Since(start).Seconds())
}

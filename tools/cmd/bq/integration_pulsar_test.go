//go:build integration

package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"

	"github.com/babelqueue/babelqueue-go/brokertest"
	babelqueue "github.com/babelqueue/babelqueue-go/core"
	"github.com/babelqueue/babelqueue-go/core/wire"
)

// seedPulsarDLQ writes dead letters with their contract properties.
func seedPulsarDLQ(t *testing.T, ctx context.Context, url, topic string, seeds []seedDeadLetter) {
	t.Helper()
	c, err := pulsar.NewClient(pulsar.ClientOptions{URL: url, Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	p, err := c.CreateProducer(pulsar.ProducerOptions{Topic: topic})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	for _, s := range seeds {
		msg := &pulsar.ProducerMessage{Key: s.key, Properties: map[string]string{}}
		var headers []wire.Header
		msg.Payload, headers = s.encode(t, "")
		for _, h := range headers {
			msg.Properties[h.Key] = h.Value
		}
		if _, err := p.Send(ctx, msg); err != nil {
			t.Fatal(err)
		}
	}
}

func TestPulsarPublishTailPeekStatsRedrive(t *testing.T) {
	url := brokertest.PulsarURL(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	queue := brokertest.Topic(t, "bq")
	dlq := queue + ".dlq"

	out := mustBQ(t, ctx, "publish", "--broker", url, "--queue", queue, "--urn", "urn:bq:p:pub", "--data", `{"x":1}`, "--header", "traceparent=00-p", "--json")
	var pub publishResult
	if err := json.Unmarshal([]byte(out), &pub); err != nil || pub.ID == "" {
		t.Fatalf("publish: %q %v", out, err)
	}
	out = mustBQ(t, ctx, "tail", "--broker", url, "--queue", queue, "--from-start", "--follow=false", "--json")
	var v recordView
	if err := json.Unmarshal([]byte(strings.TrimSpace(out)), &v); err != nil {
		t.Fatalf("tail %q: %v", out, err)
	}
	hs := map[string]string{}
	for _, h := range v.Headers {
		hs[h.Key] = h.Value
	}
	if v.ID != pub.ID || v.URN != "urn:bq:p:pub" || hs["traceparent"] != "00-p" || hs["bq-job"] != "urn:bq:p:pub" || v.MessageID == "" {
		t.Errorf("tail view %+v", v)
	}

	seedPulsarDLQ(t, ctx, url, dlq, []seedDeadLetter{
		{key: "a1", urn: "urn:a", reason: "failed", queue: queue},
		{key: "a2", urn: "urn:a", reason: "failed", queue: queue},
		{key: "b1", urn: "urn:b", reason: "unknown_urn", queue: queue},
	})
	out = mustBQ(t, ctx, "dlq", "stats", "--broker", url, "--dlq", dlq, "--json")
	var st dlqStats
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		t.Fatal(err)
	}
	if st.Total != 3 || st.ByURN["urn:a"] != 2 || st.ByReason["unknown_urn"] != 1 || st.ByOriginQueue[queue] != 3 || st.ByAge["<1m"] != 3 {
		t.Errorf("stats %+v", st)
	}
	out = mustBQ(t, ctx, "dlq", "peek", "--broker", url, "--dlq", dlq, "--urn", "urn:b", "--json")
	sc := bufio.NewScanner(strings.NewReader(out))
	n := 0
	for sc.Scan() {
		var pv recordView
		if err := json.Unmarshal(sc.Bytes(), &pv); err != nil {
			t.Fatal(err)
		}
		if pv.URN != "urn:b" || pv.DeadLetter == nil || pv.DeadLetter.Reason != "unknown_urn" || pv.Key != "b1" {
			t.Errorf("peek %+v", pv)
		}
		n++
	}
	if n != 1 {
		t.Errorf("peek showed %d, want 1", n)
	}

	// Dry run moves nothing; a real run moves urn:a only; a rerun moves nothing.
	out = mustBQ(t, ctx, "redrive", "--broker", url, "--queue", queue, "--urn", "urn:a", "--dry-run", "--json")
	var rep redriveReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil || rep.WouldMove != 2 || !rep.DryRun {
		t.Fatalf("dry run %+v %v", rep, err)
	}
	out = mustBQ(t, ctx, "redrive", "--broker", url, "--queue", queue, "--urn", "urn:a", "--replay-bypass", "--json")
	rep = redriveReport{}
	if err := json.Unmarshal([]byte(out), &rep); err != nil || rep.Moved != 2 || rep.Targets[queue] != 2 {
		t.Fatalf("redrive %+v %v", rep, err)
	}
	out = mustBQ(t, ctx, "tail", "--broker", url, "--queue", queue, "--from-start", "--follow=false", "--json")
	var urnA int
	sc = bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		var tv recordView
		if err := json.Unmarshal(sc.Bytes(), &tv); err != nil {
			t.Fatal(err)
		}
		if tv.URN != "urn:a" {
			continue
		}
		urnA++
		if tv.DeadLetter != nil {
			t.Errorf("redriven message keeps dead_letter: %s", tv.Envelope)
		}
		for _, h := range tv.Headers {
			if h.Key == wire.HeaderReplayBypass && h.Value != "true" {
				t.Errorf("bypass header %q", h.Value)
			}
		}
	}
	if urnA != 2 {
		t.Errorf("%s holds %d urn:a messages, want 2:\n%s", queue, urnA, out)
	}
	out = mustBQ(t, ctx, "redrive", "--broker", url, "--queue", queue, "--urn", "urn:a", "--json")
	rep = redriveReport{}
	if err := json.Unmarshal([]byte(out), &rep); err != nil || rep.Moved != 0 || rep.Outcomes[outcomeUnselected] != 1 {
		t.Errorf("rerun %+v %v; want nothing moved, urn:b left", rep, err)
	}
	_, errOut, code := bq(t, ctx, "topics", "ensure", "--broker", url, "--topic", queue)
	if code != exitUsage || !strings.Contains(errOut, "needs a Kafka broker") {
		t.Errorf("topics ensure on Pulsar: exit %d %q", code, errOut)
	}
}

func TestPulsarRedriveGuard(t *testing.T) {
	url := brokertest.PulsarURL(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	queue := brokertest.Topic(t, "bq")
	seedPulsarDLQ(t, ctx, url, queue+".dlq", []seedDeadLetter{
		{key: "fresh", urn: "urn:g", reason: "failed", queue: queue},
		{key: "tired", urn: "urn:g", reason: "failed", queue: queue, redrives: 3},
	})
	out, errOut, code := bq(t, ctx, "redrive", "--broker", url, "--queue", queue, "--json")
	if code != exitPartial {
		t.Fatalf("exit %d, want %d (stderr %s)", code, exitPartial, errOut)
	}
	var rep redriveReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil || rep.Moved != 1 || len(rep.Guarded) != 1 || rep.Guarded[0].Count != 3 {
		t.Fatalf("report %+v %v", rep, err)
	}
	out = mustBQ(t, ctx, "tail", "--broker", url, "--queue", queue, "--from-start", "--follow=false", "--json")
	var v recordView
	if err := json.Unmarshal([]byte(strings.TrimSpace(out)), &v); err != nil {
		t.Fatalf("target %q: %v", out, err)
	}
	count := ""
	for _, h := range v.Headers {
		if h.Key == headerRedriveCount {
			count = h.Value
		}
	}
	if v.Key != "fresh" || count != "1" {
		t.Errorf("moved message key %q count %q", v.Key, count)
	}
}

func TestPulsarTailFollows(t *testing.T) {
	url := brokertest.PulsarURL(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	queue := brokertest.Topic(t, "bq")
	mustBQ(t, ctx, "publish", "--broker", url, "--queue", queue, "--urn", "urn:bq:before")
	line := tailFollows(t, ctx, time.Minute, url, queue, "urn:bq:after")
	if !strings.Contains(line, `"urn":"urn:bq:after"`) {
		t.Errorf("tail from the end printed %q, want a message published after it started", line)
	}
}

// pulsarTopicIn returns how many messages were written to topic
// (public/default) since the broker loaded it, from the admin API.
func pulsarTopicIn(t *testing.T, topic string) int {
	t.Helper()
	resp, err := http.Get(brokertest.PulsarAdminURL(t) + "/admin/v2/persistent/public/default/" + topic + "/stats")
	if err != nil {
		t.Fatalf("admin stats of %s: %v", topic, err)
	}
	defer resp.Body.Close()
	var st struct {
		MsgInCounter int `json:"msgInCounter"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		t.Fatalf("admin stats of %s (%s): %v", topic, resp.Status, err)
	}
	return st.MsgInCounter
}

// drainPulsar reads topic on subscription sub from its position,
// acknowledging, until nothing arrives for two seconds, and counts the
// messages by meta.id.
func drainPulsar(t *testing.T, ctx context.Context, url, topic, sub string) (map[string]int, int) {
	t.Helper()
	c, err := pulsar.NewClient(pulsar.ClientOptions{URL: url, Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	cons, err := c.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: sub, Type: pulsar.Shared,
		SubscriptionInitialPosition: pulsar.SubscriptionPositionEarliest})
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	ids, n := map[string]int{}, 0
	for {
		rctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		m, err := cons.Receive(rctx)
		cancel()
		if err != nil {
			return ids, n
		}
		n++
		if env, err := babelqueue.Decode(m.Payload()); err == nil {
			ids[env.Meta.ID]++
		}
		if err := cons.Ack(m); err != nil {
			t.Fatal(err)
		}
	}
}

// TestPulsarRedriveKilledAndResumed SIGKILLs the bq binary three times in
// the middle of a redrive where three dead letters in four move and the
// fourth stays, then lets a run finish, and counts: a consumer of the
// target sees every moved message exactly once, and the DLQ subscription
// holds exactly the messages that stay.
func TestPulsarRedriveKilledAndResumed(t *testing.T) {
	url := brokertest.PulsarURL(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	bin := bqBinary(t)
	queue := brokertest.Topic(t, "bq")
	dlq := queue + ".dlq"
	// The target's consumer subscribes before anything moves.
	if ids, _ := drainPulsar(t, ctx, url, queue, "work"); len(ids) != 0 {
		t.Fatalf("target not empty: %v", ids)
	}
	const total = 400
	seeds := make([]seedDeadLetter, total)
	for i := range seeds {
		seeds[i] = seedDeadLetter{key: fmt.Sprintf("key-%d", i), urn: "urn:bq:kill", reason: "failed", queue: queue}
		if i%4 == 3 {
			seeds[i].urn = "urn:bq:stay"
		}
	}
	seedPulsarDLQ(t, ctx, url, dlq, seeds)
	before, n := drainPulsar(t, ctx, url, dlq, "census") // another subscription: the redrive's is untouched
	if n != total || len(before) != total {
		t.Fatalf("DLQ holds %d messages of %d ids, want %d", n, len(before), total)
	}
	args := []string{"redrive", "--broker", url, "--queue", queue, "--urn", "urn:bq:kill", "--json", "--no-progress"}

	kills := 0
	for _, atLeast := range []int{30, 110, 200} {
		cmd := exec.CommandContext(ctx, bin, args...)
		cmd.Stdout, cmd.Stderr = io.Discard, io.Discard
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		for pulsarTopicIn(t, queue) < atLeast {
			if ctx.Err() != nil {
				t.Fatal("redrive made no progress")
			}
			time.Sleep(5 * time.Millisecond)
		}
		if sigkill(t, cmd, cmd.Wait) {
			kills++
		}
	}
	if kills == 0 {
		t.Fatal("no run was killed mid-way; the test proves nothing")
	}
	out, err := exec.CommandContext(ctx, bin, args...).Output()
	if err != nil {
		t.Fatalf("final run: %v (%s)", err, out)
	}
	var rep redriveReport
	if err := json.Unmarshal(out, &rep); err != nil {
		t.Fatalf("final report %q: %v", out, err)
	}
	t.Logf("killed %d runs; final run: examined %d moved %d recovered %d kept %d resumed %t", kills, rep.Examined, rep.Moved, rep.Recovered, rep.Kept, rep.Resumed)

	moved, n := drainPulsar(t, ctx, url, queue, "work")
	if want := total - total/4; n != want || len(moved) != want {
		t.Errorf("the target's consumer received %d messages of %d ids, want %d", n, len(moved), want)
	}
	for id, k := range moved {
		if k != 1 {
			t.Errorf("message %s received %d times by the target's consumer", id, k)
		}
	}
	// Nothing left to move; what stays is examined once more.
	again, err := exec.CommandContext(ctx, bin, args...).Output()
	if err != nil {
		t.Fatal(err)
	}
	var rep2 redriveReport
	if err := json.Unmarshal(again, &rep2); err != nil || rep2.Moved != 0 || rep2.Examined != total/4 || rep2.Recovered != 0 {
		t.Errorf("rerun after completion: %+v, %v", rep2, err)
	}
	// The redrive's subscription holds exactly the messages that stay,
	// each once, and none of those reached the target.
	left, n := drainPulsar(t, ctx, url, dlq, "bq-redrive")
	if n != total/4 || len(left) != total/4 {
		t.Errorf("the DLQ subscription holds %d messages of %d ids, want %d", n, len(left), total/4)
	}
	for id := range left {
		if moved[id] > 0 {
			t.Errorf("message %s both stayed and moved", id)
		}
	}
}

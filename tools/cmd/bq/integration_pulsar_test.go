//go:build integration

package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	babelqueue "github.com/babelqueue/babelqueue-go/core"
	"github.com/babelqueue/babelqueue-go/tools/brokertest"
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
		if s.raw != nil {
			msg.Payload = s.raw
		} else {
			env, err := babelqueue.Make(s.urn, map[string]string{"key": s.key}, babelqueue.WithQueue(s.queue))
			if err != nil {
				t.Fatal(err)
			}
			body, _ := env.Encode()
			body, err = babelqueue.AnnotateDeadLetter(body, babelqueue.DeadLetter{Reason: s.reason, FailedAt: time.Now().UnixMilli(), OriginalQueue: s.queue, Attempts: 3})
			if err != nil {
				t.Fatal(err)
			}
			msg.Payload = body
			for _, h := range babelqueue.ProjectBody(body).Headers() {
				msg.Properties[h.Key] = h.Value
			}
		}
		if s.redrives > 0 {
			msg.Properties[headerRedriveCount] = fmt.Sprint(s.redrives)
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
	if err := json.Unmarshal([]byte(out), &rep); err != nil || rep.Moved != 2 || !rep.DryRun {
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
			if h.Key == babelqueue.HeaderReplayBypass && h.Value != "true" {
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
	if code != exitError || !strings.Contains(errOut, "needs a Kafka broker") {
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
	pr, pw := io.Pipe()
	done := make(chan int, 1)
	go func() {
		defer pw.Close()
		var errOut bytes.Buffer
		done <- run(ctx, []string{"tail", "--broker", url, "--queue", queue, "--json", "--limit", "1"}, pw, &errOut)
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
			mustBQ(t, ctx, "publish", "--broker", url, "--queue", queue, "--urn", "urn:bq:after")
		case line = <-lines:
		case <-ctx.Done():
			t.Fatal("tail printed nothing")
		}
	}
	if !strings.Contains(line, `"urn":"urn:bq:after"`) {
		t.Errorf("tail from the end printed %q, want a message published after it started", line)
	}
	if code := <-done; code != exitOK {
		t.Errorf("exit %d", code)
	}
}

package main

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/babelqueue/babelqueue-go/core/bqtest"
	"github.com/segmentio/kafka-go"
)

func TestUsage(t *testing.T) {
	cases := []struct {
		args     []string
		code     int
		contains string
	}{
		{nil, exitUsage, "dev"},
		{[]string{"nope"}, exitUsage, `unknown command "nope"`},
		{[]string{"dev"}, exitUsage, "kafka"},
		{[]string{"dev", "nope"}, exitUsage, `unknown command "nope"`},
		{[]string{"dev", "kafka", "-h"}, exitOK, "--addr"},
		{[]string{"dev", "kafka", "--bogus"}, exitUsage, "unknown flag: --bogus"},
		{[]string{"dev", "kafka", "extra"}, exitUsage, "unexpected arguments"},
		{[]string{"dev", "kafka", "-addr", "0.0.0.0:9092"}, exitUsage, "127.0.0.1 only"},
		{[]string{"dev", "kafka", "--addr", "127.0.0.1"}, exitUsage, "--addr"},
		{[]string{"dev", "kafka", "-addr", "127.0.0.1:0", "-partitions", "0"}, exitError, "invalid option"},
	}
	for _, c := range cases {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			var out, errOut bytes.Buffer
			code := run(context.Background(), c.args, &out, &errOut)
			if code != c.code {
				t.Errorf("exit code %d, want %d (stderr %q)", code, c.code, errOut.String())
			}
			if !strings.Contains(errOut.String()+out.String(), c.contains) {
				t.Errorf("stderr %q does not contain %q", errOut.String(), c.contains)
			}
		})
	}
}

func TestDevKafkaServesUntilCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pr, pw := io.Pipe()
	var errOut bqtest.SyncBuffer
	done := make(chan int, 1)
	go func() {
		defer pw.Close()
		done <- run(ctx, []string{"dev", "kafka", "-addr", "127.0.0.1:0", "-topics", "a,b", "-partitions", "2"}, pw, &errOut)
	}()

	line, err := bufio.NewReader(pr).ReadString('\n')
	if err != nil {
		t.Fatalf("reading the first line: %v (stderr %q)", err, errOut.String())
	}
	addr, ok := strings.CutPrefix(strings.TrimSpace(line), "BQ_KAFKA_BROKERS=")
	if !ok || !strings.HasPrefix(addr, "127.0.0.1:") {
		t.Fatalf("first line %q, want BQ_KAFKA_BROKERS=127.0.0.1:<port>", line)
	}
	go io.Copy(io.Discard, pr)

	tctx, tcancel := context.WithTimeout(ctx, 20*time.Second)
	defer tcancel()
	client := &kafka.Client{Addr: kafka.TCP(addr), Timeout: 10 * time.Second}
	md, err := client.Metadata(tctx, &kafka.MetadataRequest{Topics: []string{"a", "b"}})
	if err != nil {
		t.Fatalf("Metadata: %v", err)
	}
	if len(md.Topics) != 2 || len(md.Topics[0].Partitions) != 2 || len(md.Topics[1].Partitions) != 2 {
		t.Fatalf("seeded topics: %+v, want a and b with 2 partitions", md.Topics)
	}

	cancel()
	select {
	case code := <-done:
		if code != exitOK {
			t.Fatalf("exit code %d after cancel, want 0 (stderr %q)", code, errOut.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("bq dev kafka did not stop after its context ended")
	}
}

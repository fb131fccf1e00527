package main

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"
	"time"
)

// TestConnectionRefusedIsSaid: a port nothing listens on is reported as
// "connection refused", not as a broker that did not answer in time.
func TestConnectionRefusedIsSaid(t *testing.T) {
	clearBrokerEnv(t)
	for _, args := range [][]string{
		{"topics", "list", "-b", "127.0.0.1:1"},
		{"publish", "-b", "pulsar://127.0.0.1:1", "-t", "q", "-u", "urn:a:b"},
	} {
		code, _, errOut := runNoBroker(t, args...)
		if code != exitError || !strings.Contains(errOut, "127.0.0.1:1: connection refused") || strings.Contains(errOut, "within") {
			t.Errorf("bq %v: exit %d\n%s", args, code, errOut)
		}
		if n := strings.Count(errOut, "\n"); n != 1 {
			t.Errorf("bq %v: %d lines, want the cause in one:\n%s", args, n, errOut)
		}
	}
}

// TestRedriveOfAMissingQueue: one clear error, exit 1, no table.
func TestRedriveOfAMissingQueue(t *testing.T) {
	_, runBQ := embedded(t, 1, "orders", "orders.dlq")
	for _, args := range [][]string{
		{"redrive", "-t", "nosuchqueue"},
		{"dlq", "discard", "-t", "nosuchqueue", "--all", "--dry-run"},
	} {
		code, out, errOut := runBQ(args...)
		if code != exitError || out != "" {
			t.Errorf("bq %v: exit %d, stdout %q", args, code, out)
		}
		if strings.Count(errOut, `topic "nosuchqueue.dlq" does not exist`) != 1 || strings.Count(errOut, "\n") != 1 {
			t.Errorf("bq %v: stderr, want the error once:\n%s", args, errOut)
		}
	}
	code, _, errOut := runBQ("dlq", "stats", "-t", "nosuchqueue")
	if code != exitError || !strings.Contains(errOut, `topic "nosuchqueue.dlq" does not exist`) {
		t.Errorf("dlq stats: exit %d %s", code, errOut)
	}
}

func TestJSONErrorsSayWhere(t *testing.T) {
	cases := []struct{ in, want string }{
		{`{"a":1`, "not valid JSON at the end, line 1, column 7 (byte 6): it stops early"},
		{`{"a":1,}`, "not valid JSON at line 1, column 8 (byte 7): invalid character '}'"},
		{"{\n  \"a\": 1,\n  \"b\": tru\n}", "not valid JSON at line 3, column 11 (byte 22): invalid character '\\n'"},
		{`{'a':1}`, "not valid JSON at line 1, column 2 (byte 1): invalid character '\\''"},
	}
	for _, c := range cases {
		if err := checkData([]byte(c.in)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("checkData(%q) = %v, want %q", c.in, err, c.want)
		}
	}
	clearBrokerEnv(t)
	code, _, errOut := runNoBroker(t, "publish", "-b", "127.0.0.1:1", "-t", "q", "-u", "urn:a:b", "--data", `{"a":1`)
	if code != exitUsage || !strings.Contains(errOut, "--data: not valid JSON at the end, line 1, column 7") {
		t.Errorf("publish --data: exit %d %s", code, errOut)
	}
}

func TestTailNoFollowNamesWhatWasTyped(t *testing.T) {
	clearBrokerEnv(t)
	code, _, errOut := runNoBroker(t, "tail", "-b", "127.0.0.1:1", "-t", "q", "--no-follow")
	if code != exitUsage || !strings.Contains(errOut, "--no-follow needs a start") || strings.Contains(errOut, "--follow=false") {
		t.Errorf("exit %d: %s", code, errOut)
	}
}

// TestTailOffsetPastTheEnd: exit 1 and a message naming the partition's
// end; within the end, it reads from the offset.
func TestTailOffsetPastTheEnd(t *testing.T) {
	_, runBQ := embedded(t, 1, "orders")
	for i := 0; i < 3; i++ {
		mustRun(t, runBQ, "publish", "-t", "orders", "-u", "urn:bq:o", "-d", `{}`)
	}
	code, out, errOut := runBQ("tail", "-t", "orders", "--offset", "7", "--no-follow")
	if code != exitError || out != "" || !strings.Contains(errOut, `--offset 7 is past the end of "orders" (partition 0 ends at 3)`) {
		t.Errorf("exit %d, stdout %q, stderr %s", code, out, errOut)
	}
	out = mustRun(t, runBQ, "tail", "-t", "orders", "--offset", "1", "--no-follow", "--format", "{offset}")
	if out != "1\n2\n" {
		t.Errorf("tail --offset 1: %q", out)
	}
}

func TestPlurals(t *testing.T) {
	if nOf(1, "partition", "") != "1 partition" || nOf(0, "dead letter", "") != "0 dead letters" || nOf(2, "topic exists", "topics exist") != "2 topics exist" {
		t.Error("nOf")
	}
	st := newDLQStats("q.dlq")
	now := time.Now()
	st.add(&record{Value: deadLetterBody(t, "urn:a", "q", "failed", now), Time: now}, now)
	var b bytes.Buffer
	if err := st.write(&b); err != nil || !strings.HasPrefix(b.String(), "q.dlq: 1 dead letter (0 undecodable)") {
		t.Errorf("%v %s", err, b.String())
	}
	_, runBQ := embedded(t, 1, "orders")
	out := mustRun(t, runBQ, "topics", "ensure", "-t", "orders", "--partitions", "1")
	if !strings.Contains(out, "orders: 1 partition,") {
		t.Errorf("topics ensure: %s", out)
	}
	out = mustRun(t, runBQ, "topics", "describe", "-t", "orders")
	if !strings.Contains(out, "(work), 1 partition\n") {
		t.Errorf("topics describe: %s", out)
	}
}

// TestPeekSaysDeliveries: the dead_letter block's attempts is printed as
// what it counts, the deliveries (the first included).
func TestPeekSaysDeliveries(t *testing.T) {
	r := &record{Topic: "q.dlq", Value: deadLetterBody(t, "urn:a", "q", "failed", time.UnixMilli(1000))}
	var b bytes.Buffer
	writeRecordText(&b, r.view())
	if !strings.Contains(b.String(), "deliveries=3 ") || strings.Contains(b.String(), "dead_letter: reason=failed original_queue=q attempts") {
		t.Errorf("%s", b.String())
	}
	_, out, _ := runNoBroker(t, "dlq", "peek", "--help")
	if !strings.Contains(out, "the first delivery included") {
		t.Errorf("peek help does not define deliveries:\n%s", out)
	}
}

func TestVersion(t *testing.T) {
	src := &debug.BuildInfo{Main: debug.Module{Path: "github.com/babelqueue/babelqueue-go/tools", Version: "(devel)"},
		Deps: []*debug.Module{{Path: "github.com/babelqueue/babelqueue-go/core", Version: "(devel)"},
			{Path: "github.com/babelqueue/babelqueue-go/kafka", Version: "v0.1.0", Replace: &debug.Module{Path: "../kafka"}}}}
	got := formatVersion(src, "")
	for _, s := range []string{"bq " + sourceVersions["tools"] + "+source go", "\n  core   " + sourceVersions["core"] + "+source",
		"\n  kafka  v0.1.0 (from ../kafka)", "\n  pulsar not linked"} {
		if !strings.Contains(got, s) {
			t.Errorf("source build: %q lacks %q", got, s)
		}
	}
	if strings.Contains(got, "devel") {
		t.Errorf("source build says devel: %q", got)
	}
	inst := &debug.BuildInfo{Main: debug.Module{Version: "v0.3.0"}, Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "0123456789abcdef"}},
		Deps: []*debug.Module{{Path: "github.com/babelqueue/babelqueue-go/pulsar", Version: "v0.2.1"}}}
	got = formatVersion(inst, "")
	if !strings.HasPrefix(got, "bq v0.3.0 (0123456789ab) go") || !strings.Contains(got, "\n  pulsar v0.2.1") {
		t.Errorf("installed build: %q", got)
	}
	if got := formatVersion(inst, "v9.9.9"); !strings.HasPrefix(got, "bq v9.9.9 ") {
		t.Errorf("-ldflags version: %q", got)
	}
	code, out, _ := runNoBroker(t, "version")
	if code != exitOK || !strings.Contains(out, "\n  core   ") || strings.Contains(out, "devel") {
		t.Errorf("bq version: %d %q", code, out)
	}
}

// TestSourceVersions: the versions bq reports for a build from source
// are the ones versions.txt lists.
func TestSourceVersions(t *testing.T) {
	f, err := os.Open(filepath.Join("..", "..", "..", "versions.txt"))
	if err != nil {
		t.Skipf("not in the repository tree: %v", err)
	}
	defer f.Close()
	listed := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if fs := strings.Fields(sc.Text()); len(fs) == 2 && !strings.HasPrefix(fs[0], "#") {
			listed[fs[0]] = fs[1]
		}
	}
	for m, v := range sourceVersions {
		if listed[m] != v {
			t.Errorf("sourceVersions[%q] = %s, versions.txt lists %s: update version.go", m, v, listed[m])
		}
	}
}

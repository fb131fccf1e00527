package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/babelqueue/babelqueue-go/conformance"
	"github.com/babelqueue/babelqueue-go/conformance/corebinding"
)

// kafkaProjector is a stand-in broker binding: it implements only
// KafkaProjector, right or wrong.
type kafkaProjector struct{ wrong bool }

func (kafkaProjector) Name() string { return "kafka" }

func (k kafkaProjector) KafkaHeaders(body []byte) ([]conformance.Header, error) {
	hs, err := corebinding.New().KafkaHeaders(body)
	if k.wrong && len(hs) > 0 {
		hs = hs[1:]
	}
	return hs, err
}

func (kafkaProjector) NotImplemented(block string) string {
	if strings.HasPrefix(block, "pulsar.") {
		return "Pulsar block"
	}
	return ""
}

// writeReport runs the embedded suite against b, as a binding's
// conformance test does with BQ_CONFORMANCE_REPORT set, and returns the
// report file.
func writeReport(t *testing.T, dir string, b conformance.Binding) string {
	t.Helper()
	s, err := conformance.DefaultSuite()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, b.Name()+".json")
	if err := conformance.RunSuite(context.Background(), s, b).WriteJSONFile(path); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestMatrixMergesReportsOneColumnPerBinding(t *testing.T) {
	dir := t.TempDir()
	core := writeReport(t, dir, corebinding.New())
	kafka := writeReport(t, dir, kafkaProjector{})
	var out, errOut bytes.Buffer
	if code := run([]string{"-matrix", core, kafka}, &out, &errOut); code != 0 {
		t.Fatalf("exit %d\n%s%s", code, out.String(), errOut.String())
	}
	got := out.String()
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`(?m)^block +\| core +\| kafka$`),
		regexp.MustCompile(`(?m)^cases +\| PASS (\d+)/(\d+) +\| SKIP no EnvelopeDecoder$`),
		regexp.MustCompile(`(?m)^kafka\.property_projection +\| PASS 1/1 +\| PASS 1/1$`),
		regexp.MustCompile(`(?m)^pulsar\.property_projection +\| PASS 1/1 +\| SKIP Pulsar block$`),
		regexp.MustCompile(`(?m)^babelqueue_go\.kafka_retry_tier +\| SKIP Kafka transport code: see kafka +\| SKIP no KafkaTierSelector$`),
		regexp.MustCompile(`(?m)^suite check schema/message-envelope\.schema\.json \(jsonschema\): PASS`),
	} {
		if !want.MatchString(got) {
			t.Errorf("output lacks %s:\n%s", want, got)
		}
	}
	if m := totalsLine.FindStringSubmatch(lastLine(got)); m == nil || m[2] != "0" {
		t.Fatalf("last line %q", lastLine(got))
	}
}

func TestMatrixFailsOnAFailedCaseAndOnAMissingReport(t *testing.T) {
	dir := t.TempDir()
	core := writeReport(t, dir, corebinding.New())
	kafka := writeReport(t, dir, kafkaProjector{wrong: true})
	var out, errOut bytes.Buffer
	code := run([]string{"-matrix", core, kafka, filepath.Join(dir, "pulsar.json")}, &out, &errOut)
	if code != 1 {
		t.Fatalf("exit %d, want 1\n%s%s", code, out.String(), errOut.String())
	}
	got := out.String()
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`(?m)^block +\| core +\| kafka +\| pulsar$`),
		regexp.MustCompile(`(?m)^kafka\.property_projection +\| PASS 1/1 +\| FAIL 0/1 +\| FAIL no report$`),
		regexp.MustCompile(`(?m)^  kafka  kafka\.property_projection/\S+: missing header bq-job=`),
	} {
		if !want.MatchString(got) {
			t.Errorf("output lacks %s:\n%s", want, got)
		}
	}
	if !strings.Contains(errOut.String(), "pulsar.json: no report") {
		t.Errorf("stderr %q does not name the missing report", errOut.String())
	}
	// kafka.property_projection (1 case) and kafka_header_projection (5
	// of 6 cases) fail, and the missing report counts once.
	if m := totalsLine.FindStringSubmatch(lastLine(got)); m == nil || m[2] != "7" {
		t.Fatalf("last line %q, want 7 failed", lastLine(got))
	}
}

func TestMatrixRefusesAReportOfAnotherSuite(t *testing.T) {
	dir := copySuite(t)
	manifest := filepath.Join(dir, "manifest.json")
	raw, err := os.ReadFile(manifest)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(manifest, append(raw, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
	other, err := conformance.LoadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "core.json")
	if err := conformance.RunSuite(context.Background(), other, corebinding.New()).WriteJSONFile(path); err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	if code := run([]string{"-matrix", path}, &out, &errOut); code != 2 {
		t.Fatalf("exit %d, want 2\n%s%s", code, out.String(), errOut.String())
	}
	if !strings.Contains(errOut.String(), "not the suite checked here") {
		t.Fatalf("stderr %q", errOut.String())
	}
	// The same report merges against its own suite.
	out.Reset()
	errOut.Reset()
	if code := run([]string{"-suite", dir, "-matrix", path}, &out, &errOut); code != 0 {
		t.Fatalf("exit %d against its own suite\n%s%s", code, out.String(), errOut.String())
	}
}

func TestMatrixFlagNeedsReports(t *testing.T) {
	for _, args := range [][]string{{"-matrix"}, {"core.json"}} {
		var out, errOut bytes.Buffer
		if code := run(args, &out, &errOut); code != 2 {
			t.Errorf("%q: exit %d, want 2", args, code)
		}
	}
}

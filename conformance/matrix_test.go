package conformance

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestReportJSONRoundTrip(t *testing.T) {
	rep := RunSuite(context.Background(), suiteOf(t, blankManifest, nil), blankOnly{unicodeBlank})
	var buf bytes.Buffer
	if err := rep.WriteJSON(&buf); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), `"status": "FAIL"`) {
		t.Fatalf("report JSON lacks the block status:\n%s", buf.String())
	}
	got, err := ReadReport(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(rep, got); diff != "" {
		t.Fatalf("report after a JSON round trip (-want +got):\n%s", diff)
	}
	if rep.SuiteDigest == "" || len(rep.SuiteDigest) != 64 {
		t.Fatalf("suite digest %q", rep.SuiteDigest)
	}
}

func TestReadReportRejectsAStatusThatDisagreesWithTheCounts(t *testing.T) {
	in := `{"suite": "x", "suite_digest": "d", "results": [{"status": "PASS", "block": "b", "binding": "k", "passed": 0, "failed": 1, "skipped": 0}]}`
	if _, err := ReadReport(strings.NewReader(in)); err == nil || !strings.Contains(err.Error(), "disagrees") {
		t.Fatalf("err = %v", err)
	}
	if _, err := ReadReport(strings.NewReader(`{"suite": "x", "results": []}`)); err == nil {
		t.Fatal("a report without digest or results was read")
	}
}

func TestMatrixCellsAndTotals(t *testing.T) {
	s := suiteOf(t, blankManifest, nil)
	good := RunSuite(context.Background(), s, blankOnly{asciiBlank})
	bad := RunSuite(context.Background(), s, renamed{blankOnly{unicodeBlank}, "other"})
	m, err := NewMatrix(good, bad)
	if err != nil {
		t.Fatal(err)
	}
	m.AddMissing("absent", "no report")
	if diff := cmp.Diff([]string{"blank-only", "other", "absent"}, m.Bindings); diff != "" {
		t.Fatalf("columns (-want +got):\n%s", diff)
	}
	for _, c := range []struct{ block, binding, want string }{
		{"babelqueue_go.blank", "blank-only", "PASS 2/2"},
		{"babelqueue_go.blank", "other", "FAIL 1/2"},
		{"babelqueue_go.blank", "absent", "FAIL no report"},
		{"whole", "blank-only", "SKIP unknown block"},
	} {
		if got := m.cellText(c.block, c.binding); got != c.want {
			t.Errorf("%s/%s = %q, want %q", c.block, c.binding, got, c.want)
		}
	}
	p, f, sk := m.Totals()
	if p != 3 || f != 2 || sk != 14 {
		t.Fatalf("totals %d/%d/%d, want 3 passed, 2 failed (one case, one missing report), 14 skipped", p, f, sk)
	}
	var out bytes.Buffer
	if err := m.Write(&out); err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(out.String(), "3 passed, 2 failed, 14 skipped\n") || !strings.Contains(out.String(), "  other  babelqueue_go.blank/nbsp: ") {
		t.Fatalf("matrix:\n%s", out.String())
	}
	if m.OK() {
		t.Fatal("a matrix with failures is OK")
	}
}

type renamed struct {
	blankOnly
	name string
}

func (r renamed) Name() string { return r.name }

func TestMatrixRefusesDuplicatesAndOtherSuites(t *testing.T) {
	s := suiteOf(t, blankManifest, nil)
	rep := RunSuite(context.Background(), s, blankOnly{asciiBlank})
	if _, err := NewMatrix(rep, rep); !errors.Is(err, ErrMatrix) {
		t.Fatalf("the same binding twice: err = %v", err)
	}
	other := RunSuite(context.Background(), suiteOf(t, strings.Replace(blankManifest, `"test"`, `"other"`, 1), nil), renamed{blankOnly{asciiBlank}, "x"})
	if _, err := NewMatrix(rep, other); !errors.Is(err, ErrMatrix) {
		t.Fatalf("two suites: err = %v", err)
	}
}

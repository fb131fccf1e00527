package conformance

import (
	"context"
	"os"
	"testing"
)

// ReportEnv names the environment variable that makes Run write its report:
// when it holds a path, Run writes the report there as JSON (WriteJSON),
// replacing the file, before the subtests run. `make conformance` sets it
// for each binding's conformance test and merges the files with
// `bqconform -matrix`.
const ReportEnv = "BQ_CONFORMANCE_REPORT"

// SuiteEnv names the environment variable that points Run at another suite
// directory when its suiteDir is "" (`make conformance SUITE=DIR`). The
// directory must be absolute: a test runs in its package's directory.
const SuiteEnv = "BQ_CONFORMANCE_SUITE"

// Run loads the suite in suiteDir (when suiteDir is "", the directory in
// SuiteEnv, else the embedded DefaultSuite) and runs it against b as subtests named block/case: a failed case
// fails the test, a skipped block or case is reported with t.Skip. It
// returns the report so a binding test can assert more, for example that a
// block it claims to implement was not skipped. With ReportEnv set, the
// report is also written to that path; a write error fails the test.
func Run(t *testing.T, suiteDir string, b Binding) *Report {
	t.Helper()
	var (
		s   *Suite
		err error
	)
	if suiteDir == "" {
		suiteDir = os.Getenv(SuiteEnv)
	}
	if suiteDir == "" {
		s, err = DefaultSuite()
	} else {
		s, err = LoadDir(suiteDir)
	}
	if err != nil {
		t.Fatalf("load suite: %v", err)
	}
	rep := RunSuite(context.Background(), s, b)
	if path := os.Getenv(ReportEnv); path != "" {
		if err := rep.WriteJSONFile(path); err != nil {
			t.Errorf("%s: %v", ReportEnv, err)
		}
	}
	for _, res := range rep.Results {
		t.Run(res.Block, func(t *testing.T) {
			if res.Status() == StatusSkipped && len(res.Cases) == 0 {
				t.Skipf("%s: %s", res.Binding, res.Reason)
			}
			for _, c := range res.Cases {
				t.Run(c.Name, func(t *testing.T) {
					switch c.Status {
					case StatusFailed:
						t.Error(c.Message)
					case StatusSkipped:
						t.Skip(c.Message)
					}
				})
			}
		})
	}
	return rep
}

package conformance

import (
	"fmt"
	"io"
)

// Status is the verdict of one block for one binding.
type Status string

// Block statuses. A block passes only when every case ran and passed.
const (
	StatusPassed  Status = "PASS"
	StatusFailed  Status = "FAIL"
	StatusSkipped Status = "SKIP"
)

// Failure is one failed case.
type Failure struct {
	Case    string
	Message string
}

// Result is the outcome of one block for one binding. Counts are cases.
type Result struct {
	Block   string
	Binding string
	Passed  int
	Failed  int
	Skipped int
	// Reason says why a block or some of its cases were skipped.
	Reason   string
	Failures []Failure
	// Cases lists every case in block order with its own outcome.
	Cases []CaseResult
}

// CaseResult is the outcome of one case.
type CaseResult struct {
	Name    string
	Status  Status
	Message string // the failure or skip reason
}

// Status is FAIL when any case failed, PASS when at least one case passed
// and none failed, and SKIP otherwise.
func (r Result) Status() Status {
	switch {
	case r.Failed > 0:
		return StatusFailed
	case r.Passed > 0:
		return StatusPassed
	default:
		return StatusSkipped
	}
}

// Report collects the results of a run.
type Report struct {
	Results []Result
}

// Totals sums the case counts of every result.
func (r *Report) Totals() (passed, failed, skipped int) {
	for _, res := range r.Results {
		passed += res.Passed
		failed += res.Failed
		skipped += res.Skipped
	}
	return passed, failed, skipped
}

// OK reports whether no case failed.
func (r *Report) OK() bool {
	_, failed, _ := r.Totals()
	return failed == 0
}

// Write prints one line per block and binding, the failures under their
// line, and a closing "N passed, M failed, K skipped" line counting cases.
func (r *Report) Write(w io.Writer) error {
	width, bwidth := 0, 0
	for _, res := range r.Results {
		width = max(width, len(res.Block))
		bwidth = max(bwidth, len(res.Binding))
	}
	for _, res := range r.Results {
		line := fmt.Sprintf("%s  %-*s  %-*s  %d passed, %d failed, %d skipped", res.Status(), width, res.Block, bwidth, res.Binding, res.Passed, res.Failed, res.Skipped)
		if res.Reason != "" {
			line += " (" + res.Reason + ")"
		}
		if _, err := fmt.Fprintln(w, line); err != nil {
			return err
		}
		for _, f := range res.Failures {
			if _, err := fmt.Fprintf(w, "      %s: %s\n", f.Case, f.Message); err != nil {
				return err
			}
		}
	}
	p, f, s := r.Totals()
	_, err := fmt.Fprintf(w, "%d passed, %d failed, %d skipped\n", p, f, s)
	return err
}

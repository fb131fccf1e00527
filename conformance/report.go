package conformance

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
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
	Case    string `json:"case"`
	Message string `json:"message"`
}

// Result is the outcome of one block for one binding. Counts are cases.
type Result struct {
	Block   string `json:"block"`
	Binding string `json:"binding"`
	Passed  int    `json:"passed"`
	Failed  int    `json:"failed"`
	Skipped int    `json:"skipped"`
	// Reason says why a block or some of its cases were skipped.
	Reason string `json:"reason,omitempty"`
	// Capability names the interface the binding lacks when the whole
	// block was skipped for that reason.
	Capability string    `json:"capability,omitempty"`
	Failures   []Failure `json:"failures,omitempty"`
	// Cases lists every case in block order with its own outcome.
	Cases []CaseResult `json:"cases,omitempty"`
}

// CaseResult is the outcome of one case.
type CaseResult struct {
	Name    string `json:"name"`
	Status  Status `json:"status"`
	Message string `json:"message,omitempty"` // the failure or skip reason
}

// resultJSON is Result as written to a report file, with its status.
type resultJSON struct {
	Status Status `json:"status"`
	resultFields
}

type resultFields Result

// MarshalJSON writes the result's fields and its Status.
func (r Result) MarshalJSON() ([]byte, error) {
	return json.Marshal(resultJSON{Status: r.Status(), resultFields: resultFields(r)})
}

// UnmarshalJSON reads a result written by MarshalJSON. The status is
// derived from the counts again; a written status that disagrees with them
// is an error.
func (r *Result) UnmarshalJSON(b []byte) error {
	var v resultJSON
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	*r = Result(v.resultFields)
	if v.Status != "" && v.Status != r.Status() {
		return fmt.Errorf("result %s/%s: status %s disagrees with its counts (%s)", r.Block, r.Binding, v.Status, r.Status())
	}
	return nil
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
	// Suite says which suite ran: EmbeddedSuite or the directory given.
	Suite string `json:"suite"`
	// SuiteDigest is the SHA-256 of the suite's manifest.json (hex), so
	// reports of different suites are never merged into one matrix.
	SuiteDigest string   `json:"suite_digest"`
	Results     []Result `json:"results"`
}

// WriteJSON writes r as indented JSON, the format ReadReport reads.
func (r *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(r); err != nil {
		return fmt.Errorf("conformance: write report: %w", err)
	}
	return nil
}

// WriteJSONFile writes r to path with WriteJSON, replacing the file.
func (r *Report) WriteJSONFile(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("conformance: write report: %w", err)
	}
	if err := r.WriteJSON(f); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("conformance: write report: %w", err)
	}
	return nil
}

// ReadReport reads a report written by WriteJSON. A report without a suite
// digest or without results is an error.
func ReadReport(r io.Reader) (*Report, error) {
	dec := json.NewDecoder(r)
	dec.DisallowUnknownFields()
	var rep Report
	if err := dec.Decode(&rep); err != nil {
		return nil, fmt.Errorf("conformance: read report: %w", err)
	}
	if rep.SuiteDigest == "" || len(rep.Results) == 0 {
		return nil, fmt.Errorf("conformance: read report: no suite digest or no results")
	}
	return &rep, nil
}

// ReadReportFile reads the report file at path with ReadReport.
func ReadReportFile(path string) (*Report, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("conformance: read report: %w", err)
	}
	defer f.Close()
	rep, err := ReadReport(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return rep, nil
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

// Write prints r as a matrix (see Matrix.Write): one row per block, one
// column per binding of the report, then "N passed, M failed, K skipped".
func (r *Report) Write(w io.Writer) error {
	m, err := NewMatrix(r)
	if err != nil {
		return err
	}
	return m.Write(w)
}

package conformance

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
)

// Matrix sets the results of several bindings side by side: one row per
// block (manifest order), one column per binding (in the order the
// bindings first appear). Every result it holds is counted once in
// Totals; a binding whose report is missing counts as one failure.
type Matrix struct {
	// Bindings are the columns.
	Bindings []string
	// Blocks are the rows.
	Blocks []string
	// Checks are results that belong to the suite rather than to a
	// binding, such as the producer schema check; they are printed under
	// the table.
	Checks []Result

	cells   map[cellKey]Result
	missing map[string]string // binding -> why it has no report
	digest  string
	suite   string
}

type cellKey struct{ block, binding string }

// ErrMatrix reports reports that cannot be merged into one matrix.
var ErrMatrix = errors.New("conformance: reports cannot be merged")

// NewMatrix merges reports. They must come from the same suite (equal
// SuiteDigest), and no block may be reported twice for one binding.
func NewMatrix(reports ...*Report) (*Matrix, error) {
	m := &Matrix{cells: map[cellKey]Result{}, missing: map[string]string{}}
	for _, rep := range reports {
		if err := m.Add(rep); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// Add merges one more report into m.
func (m *Matrix) Add(rep *Report) error {
	if m.digest == "" {
		m.digest, m.suite = rep.SuiteDigest, rep.Suite
	} else if rep.SuiteDigest != m.digest {
		return fmt.Errorf("%w: suite %q (manifest %.12s) differs from manifest %.12s", ErrMatrix, rep.Suite, rep.SuiteDigest, m.digest)
	}
	for _, r := range rep.Results {
		k := cellKey{r.Block, r.Binding}
		if _, dup := m.cells[k]; dup {
			return fmt.Errorf("%w: block %s reported twice for binding %s", ErrMatrix, r.Block, r.Binding)
		}
		m.addColumn(r.Binding)
		if !slices.Contains(m.Blocks, r.Block) {
			m.Blocks = append(m.Blocks, r.Block)
		}
		m.cells[k] = r
	}
	return nil
}

// AddMissing adds a column for a binding that produced no report; why is
// printed in each of its cells and the column counts as one failure.
func (m *Matrix) AddMissing(binding, why string) {
	m.addColumn(binding)
	m.missing[binding] = why
}

// Digest is the manifest digest of the merged reports ("" before any).
func (m *Matrix) Digest() string { return m.digest }

func (m *Matrix) addColumn(binding string) {
	if !slices.Contains(m.Bindings, binding) {
		m.Bindings = append(m.Bindings, binding)
	}
}

// Cell returns the result of block for binding and whether there is one.
func (m *Matrix) Cell(block, binding string) (Result, bool) {
	r, ok := m.cells[cellKey{block, binding}]
	return r, ok
}

// Totals sums the case counts of every cell and check; each missing report
// adds one failure.
func (m *Matrix) Totals() (passed, failed, skipped int) {
	for _, r := range m.cells {
		passed, failed, skipped = passed+r.Passed, failed+r.Failed, skipped+r.Skipped
	}
	for _, r := range m.Checks {
		passed, failed, skipped = passed+r.Passed, failed+r.Failed, skipped+r.Skipped
	}
	return passed, failed + len(m.missing), skipped
}

// OK reports whether nothing failed and no report is missing.
func (m *Matrix) OK() bool {
	_, failed, _ := m.Totals()
	return failed == 0
}

// cellText is what a cell shows: "PASS n/m" or "FAIL n/m" (cases passed
// of cases in the block), "SKIP why", or "-" when the binding did not
// report the block.
func (m *Matrix) cellText(block, binding string) string {
	if why, ok := m.missing[binding]; ok {
		return "FAIL " + why
	}
	r, ok := m.Cell(block, binding)
	if !ok {
		return "-"
	}
	return r.short()
}

func (r Result) short() string {
	total := r.Passed + r.Failed + r.Skipped
	switch r.Status() {
	case StatusSkipped:
		return "SKIP " + r.Reason
	default:
		return fmt.Sprintf("%s %d/%d", r.Status(), r.Passed, total)
	}
}

// Write prints the suite's name and manifest digest, the table
// (block | binding...), then the suite checks, the
// failed cases, the cases skipped inside blocks that ran, and a closing
// "N passed, M failed, K skipped" line counting cases.
func (m *Matrix) Write(w io.Writer) error {
	var b strings.Builder
	if m.digest != "" {
		fmt.Fprintf(&b, "suite %s (manifest sha256 %.12s)\n", m.suite, m.digest)
	}
	widths := make([]int, len(m.Bindings)+1)
	widths[0] = len("block")
	for _, blk := range m.Blocks {
		widths[0] = max(widths[0], len(blk))
	}
	for i, bn := range m.Bindings {
		widths[i+1] = len(bn)
		for _, blk := range m.Blocks {
			widths[i+1] = max(widths[i+1], len(m.cellText(blk, bn)))
		}
	}
	row := func(cells []string) {
		for i, c := range cells {
			if i > 0 {
				b.WriteString(" | ")
			}
			if i == len(cells)-1 {
				b.WriteString(c)
			} else {
				fmt.Fprintf(&b, "%-*s", widths[i], c)
			}
		}
		b.WriteString("\n")
	}
	row(append([]string{"block"}, m.Bindings...))
	rule := make([]string, len(widths))
	for i, wd := range widths {
		rule[i] = strings.Repeat("-", wd)
	}
	b.WriteString(strings.Join(rule, "-+-") + "\n")
	for _, blk := range m.Blocks {
		cells := []string{blk}
		for _, bn := range m.Bindings {
			cells = append(cells, m.cellText(blk, bn))
		}
		row(cells)
	}
	for _, c := range m.Checks {
		fmt.Fprintf(&b, "suite check %s (%s): %s\n", c.Block, c.Binding, c.short())
	}
	var failures, skips []string
	each := func(f func(r Result)) {
		for _, blk := range m.Blocks {
			for _, bn := range m.Bindings {
				if r, ok := m.Cell(blk, bn); ok {
					f(r)
				}
			}
		}
		for _, r := range m.Checks {
			f(r)
		}
	}
	each(func(r Result) {
		for _, fl := range r.Failures {
			failures = append(failures, fmt.Sprintf("  %s  %s/%s: %s", r.Binding, r.Block, fl.Case, fl.Message))
		}
		if r.Status() != StatusSkipped && r.Skipped > 0 {
			for _, c := range r.Cases {
				if c.Status == StatusSkipped {
					skips = append(skips, fmt.Sprintf("  %s  %s/%s: %s", r.Binding, r.Block, c.Name, c.Message))
				}
			}
		}
	})
	if len(failures) > 0 {
		b.WriteString("failed cases:\n" + strings.Join(failures, "\n") + "\n")
	}
	if len(skips) > 0 {
		b.WriteString("skipped cases of blocks that ran:\n" + strings.Join(skips, "\n") + "\n")
	}
	p, f, s := m.Totals()
	fmt.Fprintf(&b, "%d passed, %d failed, %d skipped\n", p, f, s)
	_, err := io.WriteString(w, b.String())
	return err
}

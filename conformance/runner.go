package conformance

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
)

// caseFunc checks one case; a non-nil error fails it, errSkipCase skips it.
type caseFunc func() error

// namedCase is one case of a block, ready to run.
type namedCase struct {
	name string
	run  caseFunc
}

// blockRunner prepares the cases of a block for a binding. It returns
// ok == false when the binding does not implement the block's capability,
// and an error when the block is malformed.
type blockRunner func(ctx context.Context, s *Suite, raw json.RawMessage, b Binding) (cases []namedCase, ok bool, err error)

// skipCase marks a case the binding cannot express (for example a value
// type its broker does not carry).
type skipCase struct{ reason string }

// Error returns the skip reason.
func (e skipCase) Error() string { return e.reason }

// Skip returns an error that a capability method returns to report that the
// binding cannot run this case; reason says why. The case is reported as
// skipped, never as passed. Wrapping the error keeps its meaning.
func Skip(reason string) error { return skipCase{reason} }

// knownBlock is a block this runner can run: its runner and the name of
// the capability interface a binding implements to take part in it.
type knownBlock struct {
	capability string
	run        blockRunner
}

// knownBlocks maps block ids to their runners.
var knownBlocks = map[string]knownBlock{}

func register(id, capability string, r blockRunner) {
	knownBlocks[id] = knownBlock{capability: capability, run: r}
}

// ReasonUnknownBlock is the skip reason of a block this runner does not know.
const ReasonUnknownBlock = "unknown block"

// KnownBlocks returns the ids of every block this runner can run.
func KnownBlocks() []string {
	ids := make([]string, 0, len(knownBlocks))
	for id := range knownBlocks {
		ids = append(ids, id)
	}
	return ids
}

// RunSuite runs every block of s against every binding, in manifest order
// and then binding order, and returns the report.
func RunSuite(ctx context.Context, s *Suite, bindings ...Binding) *Report {
	rep := &Report{Suite: s.Name, SuiteDigest: s.Digest}
	for _, blk := range s.Blocks {
		for _, b := range bindings {
			rep.Results = append(rep.Results, runBlock(ctx, s, blk, b))
		}
	}
	return rep
}

func runBlock(ctx context.Context, s *Suite, blk Block, b Binding) (res Result) {
	res = Result{Block: blk.ID, Binding: b.Name()}
	kb, known := knownBlocks[blk.ID]
	if !known {
		res.Skipped = blk.CaseCount()
		res.Reason = ReasonUnknownBlock
		return res
	}
	cases, ok, err := kb.run(ctx, s, blk.Raw, b)
	if err != nil {
		res.Failed = 1
		res.Failures = []Failure{{Case: "(block)", Message: err.Error()}}
		res.Cases = []CaseResult{{Name: "(block)", Status: StatusFailed, Message: err.Error()}}
		return res
	}
	if !ok {
		res.Skipped = blk.CaseCount()
		res.Capability = kb.capability
		res.Reason = notImplemented(b, blk.ID, kb.capability)
		return res
	}
	if len(cases) == 0 {
		res.Failed = 1
		res.Failures = []Failure{{Case: "(block)", Message: "block has no cases"}}
		return res
	}
	for _, c := range cases {
		cr := CaseResult{Name: c.name, Status: StatusPassed}
		if err := protect(c.run); err != nil {
			var sk skipCase
			if errors.As(err, &sk) {
				cr.Status, cr.Message = StatusSkipped, sk.reason
				res.Skipped++
				if res.Reason == "" {
					res.Reason = "some cases skipped: " + sk.reason
				}
			} else {
				cr.Status, cr.Message = StatusFailed, err.Error()
				res.Failed++
				res.Failures = append(res.Failures, Failure{Case: c.name, Message: err.Error()})
			}
		} else {
			res.Passed++
		}
		res.Cases = append(res.Cases, cr)
	}
	return res
}

// notImplemented says why b does not run block: the binding's own
// explanation when it gives one, else the capability it lacks.
func notImplemented(b Binding, block, capability string) string {
	if e, ok := b.(Explainer); ok {
		if why := e.NotImplemented(block); why != "" {
			return why
		}
	}
	return "no " + capability
}

// protect runs fn, turning a panic in a binding into a case failure.
func protect(fn caseFunc) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = fmt.Errorf("binding panicked: %v", v)
		}
	}()
	return fn()
}

// decodeBlock unmarshals a block strictly enough to catch a misspelt
// structure, wrapping errors with ErrSuite.
func decodeBlock(raw json.RawMessage, v any) error {
	if err := json.Unmarshal(raw, v); err != nil {
		return fmt.Errorf("%w: %v", ErrSuite, err)
	}
	return nil
}

// caseName returns name, or a positional name when the case has none.
func caseName(name string, i int) string {
	if name != "" {
		return name
	}
	return fmt.Sprintf("#%d", i+1)
}

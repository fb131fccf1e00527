package conformance

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
)

func init() {
	register("babelqueue_go.blank", "BlankRule", runBlank)
	register("babelqueue_go.attempts_header", "AttemptsHeaderParser", runAttemptsHeader)
	register("babelqueue_go.kafka_attempts_raw", "KafkaReconciler", runReconciliation(kafkaReconciliation))
	register("babelqueue_go.pulsar_attempts_raw", "PulsarReconciler", runReconciliation(pulsarReconciliation))
	register("babelqueue_go.max_attempts", "AttemptsDecider", runMaxAttempts)
	register("babelqueue_go.header_merge", "HeaderMerger", runHeaderMerge)
}

// casesOf decodes a block of the form {"cases": [...]}.
func casesOf[C any](raw json.RawMessage) ([]C, error) {
	var blk struct {
		Cases []C `json:"cases"`
	}
	if err := decodeBlock(raw, &blk); err != nil {
		return nil, err
	}
	return blk.Cases, nil
}

// eachCase builds the namedCases of a {"cases": [...]} block for the
// capability T, or reports ok == false when b does not implement T.
func eachCase[C any, T any](raw json.RawMessage, b Binding, name func(C) string, check func(T, C) error) ([]namedCase, bool, error) {
	cases, err := casesOf[C](raw)
	if err != nil {
		return nil, false, err
	}
	impl, ok := b.(T)
	if !ok {
		return nil, false, nil
	}
	out := make([]namedCase, 0, len(cases))
	for i, c := range cases {
		out = append(out, namedCase{name: caseName(name(c), i), run: func() error { return check(impl, c) }})
	}
	return out, true, nil
}

type blankCase struct {
	Name  string `json:"name"`
	Value string `json:"value"`
	Blank bool   `json:"blank"`
}

func runBlank(_ context.Context, _ *Suite, raw json.RawMessage, b Binding) ([]namedCase, bool, error) {
	return eachCase(raw, b, func(c blankCase) string { return c.Name }, func(r BlankRule, c blankCase) error {
		if got := r.IsBlank(c.Value); got != c.Blank {
			return fmt.Errorf("IsBlank(%q) = %v, want %v", c.Value, got, c.Blank)
		}
		return nil
	})
}

type attemptsHeaderCase struct {
	Name     string `json:"name"`
	Value    string `json:"value"`
	Valid    bool   `json:"valid"`
	Attempts int    `json:"attempts"`
}

func runAttemptsHeader(_ context.Context, _ *Suite, raw json.RawMessage, b Binding) ([]namedCase, bool, error) {
	return eachCase(raw, b, func(c attemptsHeaderCase) string { return c.Name }, func(p AttemptsHeaderParser, c attemptsHeaderCase) error {
		n, ok := p.ParseAttemptsHeader(c.Value)
		if ok != c.Valid {
			return fmt.Errorf("bq-attempts %q: valid = %v, want %v", c.Value, ok, c.Valid)
		}
		if ok && n != c.Attempts {
			return fmt.Errorf("bq-attempts %q = %d, want %d", c.Value, n, c.Attempts)
		}
		return nil
	})
}

type maxAttemptsCase struct {
	Name            string `json:"name"`
	Reconciled      int    `json:"reconciled_attempts"`
	MaxAttempts     int    `json:"max_attempts"`
	DeadLetter      bool   `json:"dead_letter"`
	ExpectedAction  string `json:"expected_action"`
	ExpectedCounted int    `json:"expected_counted"`
}

func runMaxAttempts(_ context.Context, _ *Suite, raw json.RawMessage, b Binding) ([]namedCase, bool, error) {
	return eachCase(raw, b, func(c maxAttemptsCase) string { return c.Name }, func(d AttemptsDecider, c maxAttemptsCase) error {
		action, counted := d.DecideAttempts(c.Reconciled, c.MaxAttempts, c.DeadLetter)
		if action != c.ExpectedAction || counted != c.ExpectedCounted {
			return fmt.Errorf("reconciled %d, max %d, dead_letter %v: got %s with attempts %d, want %s with attempts %d",
				c.Reconciled, c.MaxAttempts, c.DeadLetter, action, counted, c.ExpectedAction, c.ExpectedCounted)
		}
		return nil
	})
}

type headerMergeCase struct {
	Name     string            `json:"name"`
	Contract headerList        `json:"contract"`
	Extra    map[string]string `json:"extra"`
	Expected headerList        `json:"expected"`
}

func runHeaderMerge(_ context.Context, _ *Suite, raw json.RawMessage, b Binding) ([]namedCase, bool, error) {
	return eachCase(raw, b, func(c headerMergeCase) string { return c.Name }, func(m HeaderMerger, c headerMergeCase) error {
		got := m.MergeHeaders(slices.Clone([]Header(c.Contract)), c.Extra)
		return compareHeaderList(got, c.Expected)
	})
}

// compareHeaderList checks got against want, order included.
func compareHeaderList(got []Header, want []Header) error {
	if slices.Equal(got, want) {
		return nil
	}
	return fmt.Errorf("headers = %s, want %s", formatHeaders(got), formatHeaders(want))
}

func formatHeaders(hs []Header) string {
	s := "["
	for i, h := range hs {
		if i > 0 {
			s += " "
		}
		s += fmt.Sprintf("%s=%q", h.Key, h.Value)
	}
	return s + "]"
}

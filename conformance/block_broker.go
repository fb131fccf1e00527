package conformance

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
)

func init() {
	register("kafka.property_projection", "KafkaProjector", runProjection(kafkaProjection, func(blk projectionBlock) map[string]string { return blk.Headers }))
	register("kafka.attempts_reconciliation", "KafkaReconciler", runReconciliation(kafkaReconciliation))
	register("kafka.schema_version_gate", "KafkaVersionGate", runVersionGate(func(b Binding) (gateFunc, bool) {
		g, ok := b.(KafkaVersionGate)
		if !ok {
			return nil, false
		}
		return g.AdmitKafka, true
	}))
	register("pulsar.property_projection", "PulsarProjector", runProjection(pulsarProjection, func(blk projectionBlock) map[string]string { return blk.Properties }))
	register("pulsar.attempts_reconciliation", "PulsarReconciler", runReconciliation(pulsarReconciliation))
	register("pulsar.schema_version_gate", "PulsarVersionGate", runVersionGate(func(b Binding) (gateFunc, bool) {
		g, ok := b.(PulsarVersionGate)
		if !ok {
			return nil, false
		}
		return g.AdmitPulsar, true
	}))
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// compareHeaderSet checks that got holds exactly the headers of want, each
// once.
func compareHeaderSet(got []Header, want map[string]string) error {
	var errs []string
	seen := map[string]int{}
	for _, h := range got {
		seen[h.Key]++
		w, ok := want[h.Key]
		switch {
		case !ok:
			errs = append(errs, fmt.Sprintf("unexpected header %s=%q", h.Key, h.Value))
		case h.Value != w:
			errs = append(errs, fmt.Sprintf("%s = %q, want %q", h.Key, h.Value, w))
		}
	}
	for _, k := range sortedKeys(want) {
		switch seen[k] {
		case 0:
			errs = append(errs, fmt.Sprintf("missing header %s=%q", k, want[k]))
		case 1:
		default:
			errs = append(errs, fmt.Sprintf("header %s written %d times", k, seen[k]))
		}
	}
	return joinErrs(errs)
}

type projectionBlock struct {
	EnvelopeFile string            `json:"envelope_file"`
	Headers      map[string]string `json:"headers"`
	Properties   map[string]string `json:"properties"`
}

// projectFunc returns the header set a binding projects from an envelope
// body.
type projectFunc func(body []byte) ([]Header, error)

// runProjection runs a canonical property_projection block: the binding's
// projection of the envelope file must be exactly the block's set, as
// want picks it (Kafka headers or Pulsar properties).
func runProjection(capability func(Binding) (projectFunc, bool), want func(projectionBlock) map[string]string) blockRunner {
	return func(_ context.Context, s *Suite, raw json.RawMessage, b Binding) ([]namedCase, bool, error) {
		var blk projectionBlock
		if err := decodeBlock(raw, &blk); err != nil {
			return nil, false, err
		}
		project, ok := capability(b)
		if !ok {
			return nil, false, nil
		}
		return []namedCase{{name: blk.EnvelopeFile, run: func() error {
			body, err := s.ReadFile(blk.EnvelopeFile)
			if err != nil {
				return err
			}
			got, err := project(body)
			if err != nil {
				return fmt.Errorf("project: %w", err)
			}
			return compareHeaderSet(got, want(blk))
		}}}, true, nil
	}
}

// kafkaProjection is the projection of a KafkaProjector.
func kafkaProjection(b Binding) (projectFunc, bool) {
	p, ok := b.(KafkaProjector)
	if !ok {
		return nil, false
	}
	return p.KafkaHeaders, true
}

// pulsarProjection is the projection of a PulsarProjector, its property
// map as a list in key order.
func pulsarProjection(b Binding) (projectFunc, bool) {
	p, ok := b.(PulsarProjector)
	if !ok {
		return nil, false
	}
	return func(body []byte) ([]Header, error) {
		got, err := p.PulsarProperties(body)
		if err != nil {
			return nil, err
		}
		list := make([]Header, 0, len(got))
		for _, k := range sortedKeys(got) {
			list = append(list, Header{Key: k, Value: got[k]})
		}
		return list, nil
	}, true
}

// attemptsValue is header_attempts/property: null or absent = absent, an
// integer = its decimal text, a string = that raw value.
type attemptsValue struct {
	present bool
	raw     string
}

// UnmarshalJSON reads null, an integer or a raw string.
func (a *attemptsValue) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		return nil
	}
	a.present = true
	var n json.Number
	if err := json.Unmarshal(b, &n); err == nil {
		if _, err := strconv.ParseInt(string(n), 10, 64); err != nil {
			return fmt.Errorf("attempts value %s is not an integer", b)
		}
		a.raw = string(n)
		return nil
	}
	return json.Unmarshal(b, &a.raw)
}

type reconciliationBlock struct {
	Cases []reconciliationCase `json:"cases"`
}

// reconciliationCase is one case of an attempts_reconciliation block.
type reconciliationCase struct {
	Name             string        `json:"name"`
	BodyAttempts     int           `json:"body_attempts"`
	HeaderAttempts   attemptsValue `json:"header_attempts"`
	Property         attemptsValue `json:"property_attempts"`
	RedeliveryCount  int           `json:"redelivery_count"`
	ExpectedAttempts int           `json:"expected_attempts"`
}

// reconcileFunc returns the attempts a binding reconciles for one case of
// a reconciliation block, and how the case reads in a failure.
type reconcileFunc func(c reconciliationCase) (got int, describe string)

// runReconciliation runs a canonical attempts_reconciliation block: the
// binding's reconciled attempts of each case must be its expected ones.
func runReconciliation(capability func(Binding) (reconcileFunc, bool)) blockRunner {
	return func(_ context.Context, _ *Suite, raw json.RawMessage, b Binding) ([]namedCase, bool, error) {
		var blk reconciliationBlock
		if err := decodeBlock(raw, &blk); err != nil {
			return nil, false, err
		}
		reconcile, ok := capability(b)
		if !ok {
			return nil, false, nil
		}
		var out []namedCase
		for i, c := range blk.Cases {
			out = append(out, namedCase{name: caseName(c.Name, i), run: func() error {
				if got, what := reconcile(c); got != c.ExpectedAttempts {
					return fmt.Errorf("%s: attempts = %d, want %d", what, got, c.ExpectedAttempts)
				}
				return nil
			}})
		}
		return out, true, nil
	}
}

// kafkaReconciliation is the attempts rule of a KafkaReconciler.
func kafkaReconciliation(b Binding) (reconcileFunc, bool) {
	r, ok := b.(KafkaReconciler)
	if !ok {
		return nil, false
	}
	return func(c reconciliationCase) (int, string) {
		return r.ReconcileKafka(c.BodyAttempts, c.HeaderAttempts.raw, c.HeaderAttempts.present),
			fmt.Sprintf("body %d, header %s", c.BodyAttempts, describeAttempts(c.HeaderAttempts))
	}, true
}

// pulsarReconciliation is the attempts rule of a PulsarReconciler.
func pulsarReconciliation(b Binding) (reconcileFunc, bool) {
	r, ok := b.(PulsarReconciler)
	if !ok {
		return nil, false
	}
	return func(c reconciliationCase) (int, string) {
		return r.ReconcilePulsar(c.BodyAttempts, c.Property.raw, c.Property.present, c.RedeliveryCount),
			fmt.Sprintf("body %d, property %s, redelivery %d", c.BodyAttempts, describeAttempts(c.Property), c.RedeliveryCount)
	}, true
}

func describeAttempts(a attemptsValue) string {
	if !a.present {
		return "absent"
	}
	return strconv.Quote(a.raw)
}

type gateFunc func(value string, present bool, body []byte) bool

type gateBlock struct {
	Property string `json:"property"`
	Fixture  string `json:"fixture"`
	Cases    []struct {
		Name      string          `json:"name"`
		Value     json.RawMessage `json:"value"`
		Absent    bool            `json:"absent"`
		ValueType string          `json:"value_type"`
		Expect    string          `json:"expect"`
	} `json:"cases"`
}

// runVersionGate runs a canonical schema_version_gate block: the fixture
// body with the header set to each value must be decoded or rejected.
func runVersionGate(capability func(Binding) (gateFunc, bool)) blockRunner {
	return func(_ context.Context, s *Suite, raw json.RawMessage, b Binding) ([]namedCase, bool, error) {
		var blk gateBlock
		if err := decodeBlock(raw, &blk); err != nil {
			return nil, false, err
		}
		gate, ok := capability(b)
		if !ok {
			return nil, false, nil
		}
		var out []namedCase
		for i, c := range blk.Cases {
			name := c.Name
			if name == "" {
				switch {
				case c.Absent:
					name = "absent"
				default:
					name = "value " + string(c.Value)
				}
				name = fmt.Sprintf("#%d %s", i+1, name)
			}
			out = append(out, namedCase{name: name, run: func() error {
				value, present := "", false
				switch {
				case c.Absent || len(c.Value) == 0 || string(c.Value) == "null":
				case c.Value[0] == '"':
					if err := json.Unmarshal(c.Value, &value); err != nil {
						return fmt.Errorf("%w: %v", ErrSuite, err)
					}
					present = true
				default:
					return skipCase{"non-string header values do not exist on this broker"}
				}
				if c.ValueType != "" {
					return skipCase{"typed header values do not exist on this broker"}
				}
				var want bool
				switch c.Expect {
				case "decode":
					want = true
				case "reject":
				default:
					return fmt.Errorf("%w: expect must be decode or reject, got %q", ErrSuite, c.Expect)
				}
				body, err := s.ReadFile(blk.Fixture)
				if err != nil {
					return err
				}
				if got := gate(value, present, body); got != want {
					return fmt.Errorf("%s %s: decoded = %v, want %v", blk.Property, describeAttempts(attemptsValue{present, value}), got, want)
				}
				return nil
			}})
		}
		return out, true, nil
	}
}

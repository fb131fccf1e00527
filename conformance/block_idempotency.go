package conformance

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	babelqueue "github.com/babelqueue/babelqueue-go/core"
	"github.com/babelqueue/babelqueue-go/idempotency"
)

// The idempotency blocks (dedupe keyed on meta.id, the rule stated in
// idempotency/README.md) are broker-free: they check the
// idempotency module's Wrap over its MemoryStore, the same code whatever
// binding delivers the messages, so they run for every binding.
func init() {
	register("idempotency.dedup_key", "idempotency.Wrap", runIdempotencyKey)
	register("idempotency.sequences", "idempotency.Wrap", runIdempotencySequences)
}

type dedupKeyBlock struct {
	EnvelopeFile string `json:"envelope_file"`
	KeyField     string `json:"key_field"`
	ExpectedKey  string `json:"expected_key"`
}

func runIdempotencyKey(_ context.Context, s *Suite, raw json.RawMessage, _ Binding) ([]namedCase, bool, error) {
	var blk dedupKeyBlock
	if err := decodeBlock(raw, &blk); err != nil {
		return nil, false, err
	}
	if blk.EnvelopeFile == "" || blk.ExpectedKey == "" {
		return nil, false, fmt.Errorf("%w: idempotency.dedup_key needs envelope_file and expected_key", ErrSuite)
	}
	return []namedCase{{name: "dedup_key", run: func() error {
		if blk.KeyField != "" && blk.KeyField != "meta.id" {
			return fmt.Errorf("key_field %q: this SDK keys on meta.id", blk.KeyField)
		}
		body, err := s.ReadFile(blk.EnvelopeFile)
		if err != nil {
			return err
		}
		env, err := babelqueue.Decode(body)
		if err != nil {
			return fmt.Errorf("decode %s: %w", blk.EnvelopeFile, err)
		}
		if got := idempotency.Key(env); got != blk.ExpectedKey {
			return fmt.Errorf("dedupe key %q, want %q", got, blk.ExpectedKey)
		}
		// A redelivery (same meta.id) collapses to one effect; another
		// meta.id with the same trace_id is another effect.
		effects := 0
		h, err := idempotency.Wrap(idempotency.NewMemoryStore(nil), func(context.Context, *babelqueue.Envelope) error { effects++; return nil })
		if err != nil {
			return err
		}
		other := *env
		other.Meta.ID = blk.ExpectedKey + "-other"
		for _, e := range []*babelqueue.Envelope{env, env, &other} {
			if err := h(context.Background(), e); err != nil {
				return fmt.Errorf("delivery: %w", err)
			}
		}
		if effects != 2 {
			return fmt.Errorf("two deliveries of one meta.id and one of another id sharing its trace_id ran %d effects, want 2", effects)
		}
		return nil
	}}}, true, nil
}

type idempotencyDelivery struct {
	MetaID       string `json:"meta_id"`
	ExpectEffect string `json:"expect_effect"` // run | skip
	Outcome      string `json:"outcome"`       // ok | throw (for run)
	ForgetBefore bool   `json:"forget_before"`
}

type idempotencySequence struct {
	Name            string                `json:"name"`
	Deliveries      []idempotencyDelivery `json:"deliveries"`
	ExpectedEffects int                   `json:"expected_effects"`
}

var errThrown = errors.New("conformance: handler threw")

func runIdempotencySequences(_ context.Context, _ *Suite, raw json.RawMessage, _ Binding) ([]namedCase, bool, error) {
	cases, err := casesOf[idempotencySequence](raw)
	if err != nil {
		return nil, false, err
	}
	out := make([]namedCase, 0, len(cases))
	for i, c := range cases {
		out = append(out, namedCase{name: caseName(c.Name, i), run: func() error { return runSequence(c) }})
	}
	return out, true, nil
}

func runSequence(c idempotencySequence) error {
	ctx := context.Background()
	store := idempotency.NewMemoryStore(nil)
	var (
		invoked bool
		throw   bool
		effects int
	)
	h, err := idempotency.Wrap(store, func(context.Context, *babelqueue.Envelope) error {
		invoked = true
		effects++ // the side effect fires on every run, ok or throw
		if throw {
			return errThrown
		}
		return nil
	})
	if err != nil {
		return err
	}
	for i, d := range c.Deliveries {
		if d.ForgetBefore {
			if err := store.Forget(ctx, d.MetaID); err != nil {
				return fmt.Errorf("delivery %d: forget: %w", i+1, err)
			}
		}
		invoked, throw = false, d.Outcome == "throw"
		err := h(ctx, &babelqueue.Envelope{Job: "urn:conformance:idempotency", Meta: babelqueue.Meta{ID: d.MetaID}})
		effect := "skip"
		if invoked {
			effect = "run"
		}
		if effect != d.ExpectEffect {
			return fmt.Errorf("delivery %d (meta.id %q): %s, want %s", i+1, d.MetaID, effect, d.ExpectEffect)
		}
		switch {
		case throw && invoked && !errors.Is(err, errThrown):
			return fmt.Errorf("delivery %d: a throwing handler returned %v, want its error (so retry applies)", i+1, err)
		case !(throw && invoked) && err != nil:
			return fmt.Errorf("delivery %d: %v, want acknowledged", i+1, err)
		}
	}
	if effects != c.ExpectedEffects {
		return fmt.Errorf("%d effects, want %d", effects, c.ExpectedEffects)
	}
	return nil
}

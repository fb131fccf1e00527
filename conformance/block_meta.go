package conformance

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/babelqueue/babelqueue-go/core/wire"
)

// The meta-extension blocks (CONTRACT.md 2.9, 2.10) check the core codec,
// which every binding hands bodies to unchanged, so they are broker-free
// and run for every binding.
//
// forbidden_keys (the canonical suite's format): decoding file reports
// forbidden_key (expect "warn"), and re-encoding the decoded envelope
// leaves every pointer of expect_absent_after_reencode out.
//
// babelqueue_go.meta_extensions, one kind per case:
//   - "make": an envelope of urn, data and meta entries (in order; an
//     "ext" object is given as ext entries) with the fixed id, trace id,
//     queue and created_at encodes to exactly expect_body, or, with
//     expect_refused, fails naming that pointer.
//   - "hops": retry (attempts 1), dead letter and redrive of body keep the
//     meta.ext bytes expect_ext.
//   - "outbound": body, given whole to a producer, is refused naming the
//     pointer expect_refused (a forbidden key or the urn alias), or
//     accepted when expect_refused is empty.
func init() {
	register("forbidden_keys", "core/wire", runForbiddenKeys)
	register("babelqueue_go.meta_extensions", "core/wire", runMetaExtensions)
}

type forbiddenKeysBlock struct {
	Cases []struct {
		Name         string   `json:"name"`
		File         string   `json:"file"`
		ForbiddenKey string   `json:"forbidden_key"`
		Expect       string   `json:"expect"`
		AbsentAfter  []string `json:"expect_absent_after_reencode"`
	} `json:"cases"`
}

func runForbiddenKeys(_ context.Context, s *Suite, raw json.RawMessage, _ Binding) ([]namedCase, bool, error) {
	var blk forbiddenKeysBlock
	if err := decodeBlock(raw, &blk); err != nil {
		return nil, false, err
	}
	out := make([]namedCase, 0, len(blk.Cases))
	for i, c := range blk.Cases {
		out = append(out, namedCase{name: caseName(c.Name, i), run: func() error {
			body, err := s.ReadFile(c.File)
			if err != nil {
				return err
			}
			env, err := wire.Decode(body)
			if err != nil {
				return fmt.Errorf("decode: %v (a forbidden key is warned about, not rejected)", err)
			}
			if c.Expect != "" && c.Expect != "warn" {
				return fmt.Errorf("%w: expect %q", ErrSuite, c.Expect)
			}
			if !slices.Contains(env.DroppedKeys(), c.ForbiddenKey) {
				return fmt.Errorf("dropped keys %v, want %s reported", env.DroppedKeys(), c.ForbiddenKey)
			}
			re, err := env.Encode()
			if err != nil {
				return fmt.Errorf("re-encode: %v", err)
			}
			doc, err := parseJSON(re)
			if err != nil {
				return err
			}
			var errs []string
			for _, ptr := range c.AbsentAfter {
				if _, found := pointer(doc, ptr); found {
					errs = append(errs, ptr+" still present after re-encode")
				}
			}
			return joinErrs(errs)
		}})
	}
	return out, true, nil
}

type metaExtBlock struct {
	Cases []struct {
		Name          string          `json:"name"`
		Kind          string          `json:"kind"`
		URN           string          `json:"urn"`
		Data          json.RawMessage `json:"data"`
		Meta          [][2]any        `json:"meta"`
		Ext           [][2]any        `json:"ext"`
		ExpectBody    string          `json:"expect_body"`
		ExpectRefused string          `json:"expect_refused"`
		Body          string          `json:"body"`
		ExpectExt     string          `json:"expect_ext"`
	} `json:"cases"`
}

func runMetaExtensions(_ context.Context, _ *Suite, raw json.RawMessage, _ Binding) ([]namedCase, bool, error) {
	var blk metaExtBlock
	if err := decodeBlock(raw, &blk); err != nil {
		return nil, false, err
	}
	out := make([]namedCase, 0, len(blk.Cases))
	for i, c := range blk.Cases {
		out = append(out, namedCase{name: caseName(c.Name, i), run: func() error {
			switch c.Kind {
			case "make":
				opts := []wire.MakeOption{wire.WithID("00000000-0000-4000-8000-000000000001"), wire.WithTraceID("00000000-0000-4000-8000-000000000002"),
					wire.WithQueue("orders"), wire.WithCreatedAt(time.UnixMilli(1700000000000))}
				for _, kv := range c.Meta {
					k, _ := kv[0].(string)
					opts = append(opts, wire.WithMeta(k, kv[1]))
				}
				for _, kv := range c.Ext {
					k, _ := kv[0].(string)
					opts = append(opts, wire.WithMetaExt(k, kv[1]))
				}
				env, err := wire.Make(c.URN, c.Data, opts...)
				if c.ExpectRefused != "" {
					var ke *wire.EnvelopeKeyError
					if !errors.As(err, &ke) || ke.Pointer != c.ExpectRefused {
						return fmt.Errorf("make: %v, want refused naming %s", err, c.ExpectRefused)
					}
					return nil
				}
				if err != nil {
					return fmt.Errorf("make: %v", err)
				}
				body, err := env.Encode()
				if err != nil {
					return err
				}
				if string(body) != c.ExpectBody {
					return fmt.Errorf("body\n got %s\nwant %s", body, c.ExpectBody)
				}
				return nil
			case "outbound":
				err := wire.CheckOutbound([]byte(c.Body))
				var ke *wire.EnvelopeKeyError
				switch {
				case c.ExpectRefused == "" && err != nil:
					return fmt.Errorf("refused: %v", err)
				case c.ExpectRefused != "" && (!errors.As(err, &ke) || ke.Pointer != c.ExpectRefused):
					return fmt.Errorf("%v, want refused naming %s", err, c.ExpectRefused)
				}
				return nil
			case "hops":
				retried, err := wire.SetAttempts([]byte(c.Body), 1)
				if err != nil {
					return err
				}
				msg := "boom"
				dead, err := wire.AnnotateDeadLetter(retried, wire.DeadLetter{Reason: wire.ReasonFailed, Error: &msg, OriginalQueue: "orders", Attempts: 2, Lang: wire.Lang})
				if err != nil {
					return err
				}
				redriven, err := wire.ClearDeadLetter(dead)
				if err != nil {
					return err
				}
				var errs []string
				for name, b := range map[string][]byte{"retry": retried, "dead letter": dead, "redrive": redriven} {
					env, err := wire.Decode(b)
					if err != nil {
						return fmt.Errorf("%s: %v", name, err)
					}
					if string(env.MetaExt()) != c.ExpectExt {
						errs = append(errs, fmt.Sprintf("%s: meta.ext %s, want %s", name, env.MetaExt(), c.ExpectExt))
					}
				}
				slices.Sort(errs)
				return joinErrs(errs)
			}
			return fmt.Errorf("%w: unknown kind %q", ErrSuite, c.Kind)
		}})
	}
	return out, true, nil
}

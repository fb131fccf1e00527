package conformance

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/babelqueue/babelqueue-go/core/gdpr"
	"github.com/babelqueue/babelqueue-go/schema"
)

// The babelqueue_go.gdpr_fields block (GDPR field encryption, the rule in
// CONTRACT.md 9) is broker-free: the fields are encrypted and decrypted in
// the data object before a binding carries the body, so it runs for every
// binding. Each case is one kind:
//
//   - "sensitive_paths": the paths schema marks x-gdpr-sensitive are
//     expect_paths (sorted; the root mark "" included).
//   - "protect": protecting data_text (exact bytes) leaves a JSON string at each of
//     expect_strings, keeps every byte outside them (the parts in
//     expect_kept, in order) and unprotecting restores data byte for byte.
//   - "unprotect": protected (written by another SDK's reference cipher
//     under key_hex) unprotects to a value equal to data.
//   - "wrong_key": protected under another key fails to unprotect.
func init() {
	register("babelqueue_go.gdpr_fields", "core/gdpr", runGDPRFields)
}

type gdprFieldsBlock struct {
	Schema json.RawMessage `json:"schema"`
	KeyHex string          `json:"key_hex"`
	Cases  []struct {
		Name          string          `json:"name"`
		Kind          string          `json:"kind"`
		Data          json.RawMessage `json:"data"`
		DataText      string          `json:"data_text"`
		Protected     json.RawMessage `json:"protected"`
		ExpectPaths   []string        `json:"expect_paths"`
		ExpectStrings []string        `json:"expect_strings"`
		ExpectKept    []string        `json:"expect_kept"`
	} `json:"cases"`
}

func runGDPRFields(_ context.Context, _ *Suite, raw json.RawMessage, _ Binding) ([]namedCase, bool, error) {
	var blk gdprFieldsBlock
	if err := decodeBlock(raw, &blk); err != nil {
		return nil, false, err
	}
	key, err := hex.DecodeString(blk.KeyHex)
	if err != nil {
		return nil, false, fmt.Errorf("%w: gdpr_fields key_hex: %v", ErrSuite, err)
	}
	c, err := gdpr.NewAESGCM(key)
	if err != nil {
		return nil, false, fmt.Errorf("%w: gdpr_fields: %v", ErrSuite, err)
	}
	marks, err := schema.SensitivePaths(blk.Schema)
	if err != nil {
		return nil, false, fmt.Errorf("%w: gdpr_fields schema: %v", ErrSuite, err)
	}
	var names []string
	for _, m := range marks {
		names = append(names, m.Path)
	}
	paths := gdpr.NewPaths(names...)
	out := make([]namedCase, 0, len(blk.Cases))
	for i, cs := range blk.Cases {
		out = append(out, namedCase{name: caseName(cs.Name, i), run: func() error {
			switch cs.Kind {
			case "sensitive_paths":
				if !slices.Equal(names, cs.ExpectPaths) {
					return fmt.Errorf("paths %q, want %q", names, cs.ExpectPaths)
				}
				return nil
			case "protect":
				data := []byte(cs.DataText)
				if len(data) == 0 {
					return fmt.Errorf("%w: protect needs data_text", ErrSuite)
				}
				prot, err := gdpr.Protect(data, paths, c)
				if err != nil {
					return err
				}
				doc, err := parseJSON(prot)
				if err != nil {
					return fmt.Errorf("protected data is not JSON: %v", err)
				}
				var errs []string
				for _, ptr := range cs.ExpectStrings {
					if v, ok := pointer(doc, ptr); !ok {
						errs = append(errs, ptr+" missing")
					} else if _, isString := v.(string); !isString {
						errs = append(errs, ptr+" is not a ciphertext string")
					}
				}
				rest := prot
				for _, part := range cs.ExpectKept {
					i := bytes.Index(rest, []byte(part))
					if i < 0 {
						errs = append(errs, fmt.Sprintf("%q not kept in order in %s", part, prot))
						break
					}
					rest = rest[i+len(part):]
				}
				back, err := gdpr.Unprotect(prot, paths, c)
				if err != nil {
					errs = append(errs, "unprotect: "+err.Error())
				} else if !bytes.Equal(back, data) {
					errs = append(errs, fmt.Sprintf("unprotect gave %s, want %s", back, data))
				}
				return joinErrs(errs)
			case "unprotect", "wrong_key":
				var compact bytes.Buffer
				if err := json.Compact(&compact, cs.Protected); err != nil {
					return fmt.Errorf("%w: protected: %v", ErrSuite, err)
				}
				back, err := gdpr.Unprotect(compact.Bytes(), paths, c)
				if cs.Kind == "wrong_key" {
					if !errors.Is(err, gdpr.ErrDecrypt) {
						return fmt.Errorf("unprotect under the wrong key: %v, want a decrypt error", err)
					}
					return nil
				}
				if err != nil {
					return err
				}
				got, err := parseJSON(back)
				if err != nil {
					return err
				}
				want, err := parseJSON(cs.Data)
				if err != nil {
					return fmt.Errorf("%w: data: %v", ErrSuite, err)
				}
				if !jsonEqual(got, want) {
					return fmt.Errorf("unprotect gave %s, want %s", back, cs.Data)
				}
				return nil
			}
			return fmt.Errorf("%w: unknown kind %q", ErrSuite, cs.Kind)
		}})
	}
	return out, true, nil
}

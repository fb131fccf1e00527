package conformance

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/big"
	"strconv"
	"strings"
)

// parseJSON decodes raw keeping every number as its exact decimal text.
func parseJSON(raw []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if dec.More() {
		return nil, fmt.Errorf("trailing data after JSON value")
	}
	return v, nil
}

// jsonEqual reports whether a and b are the same JSON value. Numbers are
// compared by exact value (12345678901234567890 differs from
// 12345678901234567891; 1.0 equals 1), objects ignore key order.
func jsonEqual(a, b any) bool {
	switch av := a.(type) {
	case map[string]any:
		bv, ok := b.(map[string]any)
		if !ok || len(av) != len(bv) {
			return false
		}
		for k, x := range av {
			y, ok := bv[k]
			if !ok || !jsonEqual(x, y) {
				return false
			}
		}
		return true
	case []any:
		bv, ok := b.([]any)
		if !ok || len(av) != len(bv) {
			return false
		}
		for i := range av {
			if !jsonEqual(av[i], bv[i]) {
				return false
			}
		}
		return true
	case json.Number:
		bv, ok := b.(json.Number)
		if !ok {
			return false
		}
		x, okx := new(big.Rat).SetString(string(av))
		y, oky := new(big.Rat).SetString(string(bv))
		return okx && oky && x.Cmp(y) == 0
	default:
		return a == b
	}
}

// sameJSON parses two raw values and compares them with jsonEqual.
func sameJSON(got, want []byte) (bool, error) {
	g, err := parseJSON(got)
	if err != nil {
		return false, fmt.Errorf("got is not JSON: %v", err)
	}
	w, err := parseJSON(want)
	if err != nil {
		return false, fmt.Errorf("%w: expected value is not JSON: %v", ErrSuite, err)
	}
	return jsonEqual(g, w), nil
}

// pointer resolves an RFC 6901 JSON pointer.
func pointer(doc any, ptr string) (any, bool) {
	if ptr == "" {
		return doc, true
	}
	if !strings.HasPrefix(ptr, "/") {
		return nil, false
	}
	cur := doc
	for _, tok := range strings.Split(ptr[1:], "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		switch node := cur.(type) {
		case map[string]any:
			v, ok := node[tok]
			if !ok {
				return nil, false
			}
			cur = v
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(node) {
				return nil, false
			}
			cur = node[i]
		default:
			return nil, false
		}
	}
	return cur, true
}

// diffBytes describes where got first differs from want.
func diffBytes(got, want []byte) string {
	i := 0
	for i < len(got) && i < len(want) && got[i] == want[i] {
		i++
	}
	lo := max(i-20, 0)
	return fmt.Sprintf("bytes differ at offset %d:\n        got  %q\n        want %q", i, clip(got, lo, i+40), clip(want, lo, i+40))
}

func clip(b []byte, lo, hi int) []byte {
	return b[min(lo, len(b)):min(hi, len(b))]
}

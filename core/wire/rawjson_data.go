package wire

import (
	"encoding/json"
	"math"
	"slices"
	"strconv"
)

// maxFastDataDepth bounds the recursion of appendDataValue; deeper (or
// cyclic) values go to encoding/json, which reports cycles as errors.
const maxFastDataDepth = 64

// appendDataValue appends v as encoding/json (HTML escaping off) would
// encode it, for the values a payload is usually built from: nil, bool,
// string, json.Number, the integer and float kinds, map[string]any,
// map[string]string, []any and []string. It reports false, with dst
// possibly extended, for anything else (and for values encoding/json would
// reject, such as NaN); the caller then falls back to encoding/json.
func appendDataValue(dst []byte, v any, depth int) ([]byte, bool) {
	if depth > maxFastDataDepth {
		return dst, false
	}
	switch x := v.(type) {
	case nil:
		return append(dst, "null"...), true
	case bool:
		return strconv.AppendBool(dst, x), true
	case string:
		return appendJSONString(dst, x), true
	case json.Number:
		if x == "" || !isNumberToken(string(x)) {
			return dst, false
		}
		return append(dst, x...), true
	case int:
		return strconv.AppendInt(dst, int64(x), 10), true
	case int8:
		return strconv.AppendInt(dst, int64(x), 10), true
	case int16:
		return strconv.AppendInt(dst, int64(x), 10), true
	case int32:
		return strconv.AppendInt(dst, int64(x), 10), true
	case int64:
		return strconv.AppendInt(dst, x, 10), true
	case uint:
		return strconv.AppendUint(dst, uint64(x), 10), true
	case uint8:
		return strconv.AppendUint(dst, uint64(x), 10), true
	case uint16:
		return strconv.AppendUint(dst, uint64(x), 10), true
	case uint32:
		return strconv.AppendUint(dst, uint64(x), 10), true
	case uint64:
		return strconv.AppendUint(dst, x, 10), true
	case float64:
		return appendFloat(dst, x, 64)
	case float32:
		return appendFloat(dst, float64(x), 32)
	case map[string]any:
		if x == nil {
			return append(dst, "null"...), true
		}
		var small [8]string // most data maps are small: their keys stay on the stack
		keys := sortedKeys(x, small[:0])
		dst = append(dst, '{')
		for i, k := range keys {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendJSONString(dst, k)
			dst = append(dst, ':')
			var ok bool
			if dst, ok = appendDataValue(dst, x[k], depth+1); !ok {
				return dst, false
			}
		}
		return append(dst, '}'), true
	case map[string]string:
		if x == nil {
			return append(dst, "null"...), true
		}
		var small [8]string // most data maps are small: their keys stay on the stack
		keys := sortedKeys(x, small[:0])
		dst = append(dst, '{')
		for i, k := range keys {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendJSONString(dst, k)
			dst = append(dst, ':')
			dst = appendJSONString(dst, x[k])
		}
		return append(dst, '}'), true
	case []any:
		if x == nil {
			return append(dst, "null"...), true
		}
		dst = append(dst, '[')
		for i, e := range x {
			if i > 0 {
				dst = append(dst, ',')
			}
			var ok bool
			if dst, ok = appendDataValue(dst, e, depth+1); !ok {
				return dst, false
			}
		}
		return append(dst, ']'), true
	case []string:
		if x == nil {
			return append(dst, "null"...), true
		}
		dst = append(dst, '[')
		for i, e := range x {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendJSONString(dst, e)
		}
		return append(dst, ']'), true
	}
	return dst, false
}

// sortedKeys returns the keys of m in order, appended to keys (of length
// zero; a caller's array spares an allocation for a small map).
func sortedKeys[V any](m map[string]V, keys []string) []string {
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// appendFloat formats f as encoding/json does: the shortest representation,
// in exponent form below 1e-6 and from 1e21 on, with a one-digit negative
// exponent written without its leading zero. NaN and infinities are not
// JSON: it reports false for them.
func appendFloat(dst []byte, f float64, bits int) ([]byte, bool) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return dst, false
	}
	format := byte('f')
	if abs := math.Abs(f); abs != 0 {
		if bits == 64 && (abs < 1e-6 || abs >= 1e21) || bits == 32 && (float32(abs) < 1e-6 || float32(abs) >= 1e21) {
			format = 'e'
		}
	}
	dst = strconv.AppendFloat(dst, f, format, -1, bits)
	if format == 'e' {
		if n := len(dst); n >= 4 && dst[n-4] == 'e' && dst[n-3] == '-' && dst[n-2] == '0' {
			dst[n-2] = dst[n-1]
			dst = dst[:n-1]
		}
	}
	return dst, true
}

// isNumberToken reports whether s is exactly one JSON number.
func isNumberToken(s string) bool {
	b := []byte(s)
	end, err := scanNumber(b, 0)
	return err == nil && end == len(b)
}

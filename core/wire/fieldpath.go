package wire

import (
	"fmt"
	"slices"
	"strings"
)

// FieldPath addresses values inside a data object by a dotted path, as the
// x-gdpr-sensitive marks of a schema name them: "email",
// "profile.full_name", "addresses[].line". A part ending in "[]" (and
// longer than that suffix) descends into every element of the array it
// names. The empty path is the root and addresses nothing.
//
// A path is split on every dot, so a property whose name holds a dot cannot
// be addressed; this is how the other SDKs read the paths too.
type FieldPath struct {
	text string
	segs []fieldSeg
}

type fieldSeg struct {
	key   string
	array bool
}

// ParseFieldPath reads a dotted path; it accepts every string (see
// FieldPath for the grammar).
func ParseFieldPath(path string) FieldPath {
	p := FieldPath{text: path}
	if path == "" {
		return p
	}
	parts := strings.Split(path, ".")
	p.segs = make([]fieldSeg, len(parts))
	for i, part := range parts {
		if len(part) >= 2 && strings.HasSuffix(part, "[]") {
			p.segs[i] = fieldSeg{key: part[:len(part)-2], array: true}
		} else {
			p.segs[i] = fieldSeg{key: part}
		}
	}
	return p
}

// String returns the path as it was parsed.
func (p FieldPath) String() string { return p.text }

// IsRoot reports whether the path is the root, which addresses nothing.
func (p FieldPath) IsRoot() bool { return len(p.segs) == 0 }

// Segments returns the keys of the path in order and, for each, whether
// it descends into an array.
func (p FieldPath) Segments() (keys []string, arrays []bool) {
	keys, arrays = make([]string, len(p.segs)), make([]bool, len(p.segs))
	for i, s := range p.segs {
		keys[i], arrays[i] = s.key, s.array
	}
	return keys, arrays
}

// fieldSpan is the span of one addressed value in a data object.
type fieldSpan struct{ start, end int }

// ReplaceFields returns obj (one JSON object) with each value at one of
// paths replaced by what fn returns for it; every other byte is kept.
//
// fn gets the raw JSON of the value and returns the JSON text that takes
// its place, or ok false to leave it. A path that is absent from obj, or
// that meets a value of another type than it expects (an object to look a
// key up in, an array to descend), is skipped. When a key occurs twice in
// an object the last occurrence is the one addressed, as Decode reads it.
// A value inside another addressed value is left to fn of the outer one.
// fn is called in the order the values appear in obj, and its error stops
// the call. obj that is not a JSON object fails with ErrInvalidData.
func ReplaceFields(obj []byte, paths []FieldPath, fn func(value []byte) (repl []byte, ok bool, err error)) ([]byte, error) {
	open, _, err := scanTopObject(obj)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidData, err)
	}
	var spans []fieldSpan
	for _, p := range paths {
		if len(p.segs) > 0 {
			spans = collectFields(obj, open, 1, p.segs, spans)
		}
	}
	if len(spans) == 0 {
		return obj, nil
	}
	slices.SortFunc(spans, func(a, b fieldSpan) int { return a.start - b.start })
	out := make([]byte, 0, len(obj)+len(obj)/2)
	last := 0
	for _, s := range spans {
		if s.start < last {
			continue // inside a value already replaced, or the same value twice
		}
		repl, ok, err := fn(obj[s.start:s.end])
		if err != nil {
			return nil, err
		}
		if !ok {
			continue
		}
		out = append(out, obj[last:s.start]...)
		out = append(out, repl...)
		last = s.end
	}
	if last == 0 {
		return obj, nil
	}
	out = append(out, obj[last:]...)
	return out, nil
}

// collectFields appends the spans of the values segs addresses in the
// validated object that opens at b[open].
func collectFields(b []byte, open, depth int, segs []fieldSeg, spans []fieldSpan) []fieldSpan {
	seg := segs[0]
	it := newObjIter(b, open, depth)
	var m, hit member
	found := false
	for it.nextInto(&m) {
		if m.keyIs(b, seg.key) {
			hit, found = m, true
		}
	}
	if it.err != nil || !found {
		return spans
	}
	last := len(segs) == 1
	if !seg.array {
		if last {
			return append(spans, fieldSpan{hit.valStart, hit.valEnd})
		}
		if b[hit.valStart] == '{' {
			return collectFields(b, hit.valStart, depth+1, segs[1:], spans)
		}
		return spans
	}
	if b[hit.valStart] != '[' {
		return spans
	}
	i := skipWS(b, hit.valStart+1)
	if i < len(b) && b[i] == ']' {
		return spans
	}
	for i < len(b) {
		end, err := scanValue(b, i, depth+2)
		if err != nil {
			return spans
		}
		switch {
		case last:
			spans = append(spans, fieldSpan{i, end})
		case b[i] == '{':
			spans = collectFields(b, i, depth+2, segs[1:], spans)
		}
		i = skipWS(b, end)
		if i >= len(b) || b[i] != ',' {
			return spans
		}
		i = skipWS(b, i+1)
	}
	return spans
}

// ValidJSONValue reports whether b is one strict JSON value (as a body
// must be: valid UTF-8, RFC 8259, bounded nesting), optionally surrounded
// by whitespace.
func ValidJSONValue(b []byte) bool {
	i := skipWS(b, 0)
	if i >= len(b) {
		return false
	}
	end, err := scanValue(b, i, 1)
	return err == nil && skipWS(b, end) == len(b)
}

// AppendJSONString appends s as a JSON string, as the encoder writes
// strings (no HTML escaping), to dst.
func AppendJSONString(dst []byte, s string) []byte { return appendJSONString(dst, s) }

// UnquoteJSONString returns the value of the JSON string token tok (quotes
// included); ok is false when tok is not one valid JSON string.
func UnquoteJSONString(tok []byte) (s string, ok bool) {
	if len(tok) < 2 || tok[0] != '"' {
		return "", false
	}
	end, esc, err := scanString(tok, 0)
	if err != nil || end != len(tok) {
		return "", false
	}
	return unquote(tok, esc)
}

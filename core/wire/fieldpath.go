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

// FieldSet is a set of FieldPaths compiled into a tree of their keys, so
// that ReplaceFields reads a data object once for all of them. It is
// immutable and safe for concurrent use.
type FieldSet struct {
	root fieldNode
	n    int
}

// fieldNode is one key of the tree: its value is addressed (leaf) and/or
// searched further (next, for objects; elems, for the elements of an
// array).
type fieldNode struct {
	key   string
	leaf  bool       // the value itself is addressed
	elems *fieldNode // "key[]": every element (elems.leaf) or its keys (elems.next)
	next  []*fieldNode
}

func (n *fieldNode) child(key string) *fieldNode {
	for _, c := range n.next {
		if c.key == key {
			return c
		}
	}
	c := &fieldNode{key: key}
	n.next = append(n.next, c)
	return c
}

// NewFieldSet compiles paths; root paths address nothing and are left out.
func NewFieldSet(paths ...FieldPath) *FieldSet {
	s := &FieldSet{}
	for _, p := range paths {
		if len(p.segs) == 0 {
			continue
		}
		s.n++
		n := &s.root
		for _, seg := range p.segs {
			n = n.child(seg.key)
			if seg.array {
				if n.elems == nil {
					n.elems = &fieldNode{}
				}
				n = n.elems
			}
		}
		n.leaf = true
	}
	return s
}

// Len returns the number of paths compiled into s, root paths excluded.
func (s *FieldSet) Len() int {
	if s == nil {
		return 0
	}
	return s.n
}

// ReplaceFields returns obj (one JSON object) with each value at one of
// paths replaced by what fn returns for it; every other byte is kept.
// It compiles paths on every call: a caller with a fixed set uses
// FieldSet.Replace.
func ReplaceFields(obj []byte, paths []FieldPath, fn func(value []byte) (repl []byte, ok bool, err error)) ([]byte, error) {
	return NewFieldSet(paths...).Replace(obj, func(dst, value []byte) ([]byte, bool, error) {
		repl, ok, err := fn(value)
		return append(dst, repl...), ok, err
	})
}

// Replace returns obj (one JSON object) with each value at one of the
// paths of s replaced; every other byte is kept. When no value is
// replaced the result is obj itself.
//
// fn gets the raw JSON of the value and appends the JSON text that takes
// its place to dst, or returns ok false to leave the value (dst is then
// discarded). A path that is absent from obj, or that meets a value of
// another type than it expects (an object to look a key up in, an array
// to descend), is skipped. When a key occurs twice in an object the last
// occurrence is the one addressed, as Decode reads it. A value inside
// another addressed value is left to fn of the outer one. fn is called in
// the order the values appear in obj, and its error stops the call. obj
// that is not a JSON object fails with ErrInvalidData.
func (s *FieldSet) Replace(obj []byte, fn func(dst, value []byte) (out []byte, ok bool, err error)) ([]byte, error) {
	open := skipWS(obj, 0)
	if open >= len(obj) || obj[open] != '{' {
		if _, _, err := scanTopObject(obj); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrInvalidData, err)
		}
		return nil, fmt.Errorf("%w: not a JSON object", ErrInvalidData)
	}
	var buf [8]fieldSpan
	spans := buf[:0]
	var err error
	if s.Len() == 0 {
		_, _, err = scanTopObject(obj)
	} else {
		var end int
		spans, end, err = collectNode(obj, open, 1, &s.root, spans)
		if err == nil {
			if t := skipWS(obj, end); t != len(obj) {
				err = syntaxErr(t, "data after the top-level value")
			}
		}
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidData, err)
	}
	if len(spans) == 0 {
		return obj, nil
	}
	slices.SortFunc(spans, func(a, b fieldSpan) int { return a.start - b.start })
	out := make([]byte, 0, len(obj)*2+64*len(spans))
	last := 0
	for _, sp := range spans {
		if sp.start < last {
			continue // inside a value already replaced, or the same value twice
		}
		mark := len(out)
		out = append(out, obj[last:sp.start]...)
		var ok bool
		out, ok, err = fn(out, obj[sp.start:sp.end])
		if err != nil {
			return nil, err
		}
		if !ok {
			out = out[:mark]
			continue
		}
		last = sp.end
	}
	if last == 0 {
		return obj, nil
	}
	return append(out, obj[last:]...), nil
}

// collectNode appends the spans of the values n addresses in the object
// that opens at b[open] (which it validates whole), and returns the
// offset just past it.
func collectNode(b []byte, open, depth int, n *fieldNode, spans []fieldSpan) ([]fieldSpan, int, error) {
	// The last occurrence of each key of n counts: remember its member.
	var hitsBuf [8]member
	var idxBuf [8]int
	hits, idx := hitsBuf[:0], idxBuf[:0]
	it := newObjIter(b, open, depth)
	var m member
	for it.nextKeyInto(&m) {
		var end int
		var err error
		if m.valStart < len(b) && b[m.valStart] == '"' {
			end, m.valEscaped, err = scanString(b, m.valStart)
		} else {
			end, err = scanValue(b, m.valStart, it.depth+1)
		}
		if err != nil {
			it.fail(err)
			break
		}
		it.valueEnd(&m, end)
		for i, c := range n.next {
			if m.keyIs(b, c.key) {
				if j := slices.Index(idx, i); j >= 0 {
					hits[j] = m
				} else {
					hits, idx = append(hits, m), append(idx, i)
				}
				break
			}
		}
	}
	if it.err != nil {
		return spans, 0, it.err
	}
	for j, hit := range hits {
		c := n.next[idx[j]]
		spans = collectValue(b, hit.valStart, hit.valEnd, depth, c, spans)
	}
	return spans, it.end, nil
}

// collectValue appends the spans c addresses in the validated value
// b[start:end] (the value of c's key).
func collectValue(b []byte, start, end, depth int, c *fieldNode, spans []fieldSpan) []fieldSpan {
	if c.leaf {
		return append(spans, fieldSpan{start, end}) // the whole value: nothing inside counts
	}
	if len(c.next) > 0 && b[start] == '{' {
		spans, _, _ = collectNode(b, start, depth+1, c, spans)
	}
	if c.elems != nil && b[start] == '[' {
		i := skipWS(b, start+1)
		if i < len(b) && b[i] == ']' {
			return spans
		}
		for i < end {
			e, err := scanValue(b, i, depth+2)
			if err != nil {
				return spans
			}
			switch {
			case c.elems.leaf:
				spans = append(spans, fieldSpan{i, e})
			case len(c.elems.next) > 0 && b[i] == '{':
				spans, _, _ = collectNode(b, i, depth+2, c.elems, spans)
			}
			i = skipWS(b, e)
			if i >= len(b) || b[i] != ',' {
				return spans
			}
			i = skipWS(b, i+1)
		}
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

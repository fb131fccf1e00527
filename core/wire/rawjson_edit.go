package wire

// This file holds the byte-level edits behind minimal mutation (CONTRACT.md 2.4):
// replace, add or remove one member of an object and leave every other byte
// of the buffer as it was.

// objLayout describes one object and the last occurrence of a key in it.
type objLayout struct {
	open, end  int // offsets of '{' and just past '}'
	count      int // number of members
	lastValEnd int // end of the last member value, or open+1 when empty

	found        bool
	m            member // the last member named key
	prevValEnd   int    // value end of the member before m; -1 when m is first
	nextKeyStart int    // key start of the member after m; -1 when m is last
}

// locate scans (and validates) the object whose '{' is at b[open] and finds
// the last member named key: JSON readers keep the last of duplicate keys, so
// that is the one an edit must change.
func locate(b []byte, open int, key string) (objLayout, error) {
	l := objLayout{open: open, prevValEnd: -1, nextKeyStart: -1}
	it := newObjIter(b, open, 1)
	prevVE, pendingNext := -1, false
	for {
		m, ok := it.next()
		if !ok {
			break
		}
		if pendingNext {
			l.nextKeyStart, pendingNext = m.keyStart, false
		}
		if m.keyIs(b, key) {
			l.found, l.m, l.prevValEnd, l.nextKeyStart, pendingNext = true, m, prevVE, -1, true
		}
		prevVE = m.valEnd
	}
	if it.err != nil {
		return l, it.err
	}
	l.end, l.count, l.lastValEnd = it.end, it.count, it.lastVE
	return l, nil
}

// locateTop is locate for a whole body that must be one JSON object,
// optionally surrounded by whitespace.
func locateTop(b []byte, key string) (objLayout, error) {
	open := skipWS(b, 0)
	if open >= len(b) {
		return objLayout{}, syntaxErr(open, "empty body")
	}
	if b[open] != '{' {
		if _, err := scanValue(b, open, 1); err != nil {
			return objLayout{}, err
		}
		return objLayout{}, syntaxErr(open, "not a JSON object")
	}
	l, err := locate(b, open, key)
	if err != nil {
		return l, err
	}
	if t := skipWS(b, l.end); t != len(b) {
		return l, syntaxErr(t, "data after the top-level value")
	}
	return l, nil
}

// withMember returns a copy of b in which the object described by l has
// key set to the JSON value val: the old value bytes are replaced in place
// when the key is present; otherwise `"key":val` is inserted right after the
// last member's value (before any whitespace preceding the '}').
func withMember(b []byte, l objLayout, key string, val []byte) []byte {
	if l.found {
		out := make([]byte, 0, len(b)-(l.m.valEnd-l.m.valStart)+len(val))
		out = append(out, b[:l.m.valStart]...)
		out = append(out, val...)
		return append(out, b[l.m.valEnd:]...)
	}
	at := l.lastValEnd
	out := make([]byte, 0, len(b)+len(key)+len(val)+4)
	out = append(out, b[:at]...)
	if l.count > 0 {
		out = append(out, ',')
	}
	out = appendJSONString(out, key)
	out = append(out, ':')
	out = append(out, val...)
	return append(out, b[at:]...)
}

// withoutMember returns a copy of b without the member l.m. Removing a
// member that withMember inserted restores the original bytes exactly.
func withoutMember(b []byte, l objLayout) []byte {
	if !l.found {
		return append([]byte(nil), b...)
	}
	var from, to int
	switch {
	case l.prevValEnd >= 0: // drop ", key: value" after the previous value
		from, to = l.prevValEnd, l.m.valEnd
	case l.nextKeyStart >= 0: // first member: drop "key: value, "
		from, to = l.m.keyStart, l.nextKeyStart
	default: // only member
		from, to = l.m.keyStart, l.m.valEnd
	}
	out := make([]byte, 0, len(b)-(to-from))
	out = append(out, b[:from]...)
	return append(out, b[to:]...)
}

// splice returns a copy of b with b[from:to] replaced by repl.
func splice(b []byte, from, to int, repl []byte) []byte {
	out := make([]byte, 0, len(b)-(to-from)+len(repl))
	out = append(out, b[:from]...)
	out = append(out, repl...)
	return append(out, b[to:]...)
}

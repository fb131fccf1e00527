package wire

import "unsafe"

// ProjectString is ProjectBody of a body held in a string. Its strings
// share body's memory where the JSON text is the value (a string without
// escapes, a number), so projecting a string allocates only for escaped
// values and attempts; they are as immutable as body itself.
func ProjectString(body string) Projection {
	return project(unsafe.Slice(unsafe.StringData(body), len(body)), true)
}

// bytesString is the copying conversion ProjectBody uses for JSON text.
func bytesString(v []byte) string { return string(v) }

// viewBytes returns v as a string sharing its memory; v must never change.
func viewBytes(v []byte) string {
	if len(v) == 0 {
		return ""
	}
	return unsafe.String(&v[0], len(v))
}

// viewStringValue is stringValue without the copy: the value of the JSON
// string token v viewed in place when it holds no escape (v must never
// change), unquoted into a new string otherwise; "" when v is not a string.
func viewStringValue(v []byte) string {
	if len(v) < 2 || v[0] != '"' || v[len(v)-1] != '"' {
		return ""
	}
	if hasBackslash(v) {
		return stringValue(v)
	}
	return viewBytes(v[1 : len(v)-1])
}

package option

// Positive sets *dst to v when v is above zero, and otherwise records
// "<what> <v> is not positive".
func Positive[T ~int | ~int64](e *Errors, dst *T, what string, v T) {
	if v <= 0 {
		e.Fail("%s %v is not positive", what, v)
		return
	}
	*dst = v
}

// NonNil sets *dst to v when v is not nil (its zero value), and otherwise
// records "nil <what>".
func NonNil[T comparable](e *Errors, dst *T, what string, v T) {
	var zero T
	if v == zero {
		e.Fail("nil %s", what)
		return
	}
	*dst = v
}

// Identifier sets *dst to name when it is a plain identifier, safe to
// splice into SQL as a table name, and otherwise records a problem. A plain
// identifier is an ASCII letter or underscore, then letters, digits and
// underscores; the problem reads "<what> <name quoted> is not a plain
// identifier".
func Identifier(e *Errors, dst *string, what, name string) {
	if !PlainIdentifier(name) {
		e.Fail("%s %q is not a plain identifier", what, name)
		return
	}
	*dst = name
}

// PlainIdentifier reports whether s matches [A-Za-z_][A-Za-z0-9_]*.
func PlainIdentifier(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		letter := c == '_' || ('a' <= c && c <= 'z') || ('A' <= c && c <= 'Z')
		if !letter && (i == 0 || c < '0' || c > '9') {
			return false
		}
	}
	return true
}

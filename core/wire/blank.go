package wire

// IsBlank reports whether s is empty or holds only ASCII whitespace (space,
// \t, \n, \v, \f, \r). Unicode spaces such as NBSP, U+0085, U+FEFF and U+3000
// are not blank. Every rule of the contract that says "blank" uses it.
func IsBlank(s string) bool {
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case ' ', '\t', '\n', '\v', '\f', '\r':
		default:
			return false
		}
	}
	return true
}

package wire

import "encoding/json"

// treeOf builds the generic Go value of s, a JSON text the scanner has
// already validated, with the same result as encoding/json decoding into an
// `any` with UseNumber: objects become map[string]any (the last duplicate
// key wins), arrays []any, numbers json.Number, strings string, true/false
// bool and null nil. Strings without escapes are substrings of s, so the
// tree costs no copy of the text.
func treeOf(s string) any {
	v, _ := treeValue(s, skipWSString(s, 0))
	return v
}

func skipWSString(s string, i int) int {
	for i < len(s) && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r') {
		i++
	}
	return i
}

// treeValue decodes the validated value at s[i] and returns it with the
// offset just past it.
func treeValue(s string, i int) (any, int) {
	switch s[i] {
	case '{':
		m := make(map[string]any)
		i = skipWSString(s, i+1)
		if s[i] == '}' {
			return m, i + 1
		}
		for {
			k, j := treeString(s, i)
			j = skipWSString(s, j)
			v, j2 := treeValue(s, skipWSString(s, j+1)) // j is at ':'
			m[k] = v
			i = skipWSString(s, j2)
			if s[i] == '}' {
				return m, i + 1
			}
			i = skipWSString(s, i+1) // past ','
		}
	case '[':
		a := []any{}
		i = skipWSString(s, i+1)
		if s[i] == ']' {
			return a, i + 1
		}
		for {
			v, j := treeValue(s, i)
			a = append(a, v)
			i = skipWSString(s, j)
			if s[i] == ']' {
				return a, i + 1
			}
			i = skipWSString(s, i+1)
		}
	case '"':
		return treeString(s, i)
	case 't':
		return true, i + 4
	case 'f':
		return false, i + 5
	case 'n':
		return nil, i + 4
	default:
		j := i
		for j < len(s) {
			c := s[j]
			if (c >= '0' && c <= '9') || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E' {
				j++
				continue
			}
			break
		}
		return json.Number(s[i:j]), j
	}
}

// treeString decodes the validated string token at s[i].
func treeString(s string, i int) (string, int) {
	esc := false
	j := i + 1
	for s[j] != '"' {
		if s[j] == '\\' {
			esc = true
			j++ // skip the escaped byte ('"' or '\\' included)
		}
		j++
	}
	if !esc {
		return s[i+1 : j], j + 1
	}
	var out string
	_ = json.Unmarshal([]byte(s[i:j+1]), &out) // validated: cannot fail
	return out, j + 1
}

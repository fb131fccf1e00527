package schema

import (
	"bytes"
	"fmt"
	"sort"

	"github.com/babelqueue/babelqueue-go/core/gdpr"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

// GDPRKey is the schema keyword that marks a property as personal data
// (x-gdpr-sensitive): true, or a non-empty category string. It does not
// change what the schema accepts.
const GDPRKey = "x-gdpr-sensitive"

// SensitivePath is one property a schema marks with x-gdpr-sensitive.
type SensitivePath struct {
	// Path is the dotted path from the schema root ("profile.full_name",
	// "addresses[].line"); "" is a mark on the root schema, which
	// addresses nothing.
	Path string
	// Category is the keyword's string value, "" when it was true.
	Category string
}

// SensitivePaths returns every property schema (a JSON Schema document)
// marks with x-gdpr-sensitive, sorted by path. It follows "properties"
// (a dot per level) and an "items" schema (a "[]" suffix), as the other
// SDKs do; false, "" and other values of the keyword are no mark.
func SensitivePaths(schema []byte) ([]SensitivePath, error) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(schema))
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrSchema, err)
	}
	return sensitiveOf(doc), nil
}

func sensitiveOf(doc any) []SensitivePath {
	var out []SensitivePath
	collectSensitive(doc, "", &out)
	sort.SliceStable(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out
}

func collectSensitive(node any, path string, out *[]SensitivePath) {
	obj, ok := node.(map[string]any)
	if !ok {
		return
	}
	switch m := obj[GDPRKey].(type) {
	case bool:
		if m {
			*out = append(*out, SensitivePath{Path: path})
		}
	case string:
		if m != "" {
			*out = append(*out, SensitivePath{Path: path, Category: m})
		}
	}
	if props, ok := obj["properties"].(map[string]any); ok {
		for name, sub := range props {
			p := name
			if path != "" {
				p = path + "." + name
			}
			collectSensitive(sub, p, out)
		}
	}
	if items, ok := obj["items"].(map[string]any); ok {
		collectSensitive(items, path+"[]", out)
	}
}

// sensitiveSet returns the gdpr path set of doc's marks, or nil.
func sensitiveSet(doc any) *gdpr.Paths {
	marks := sensitiveOf(doc)
	if len(marks) == 0 {
		return nil
	}
	paths := make([]string, len(marks))
	for i, m := range marks {
		paths[i] = m.Path
	}
	if p := gdpr.NewPaths(paths...); p.Len() > 0 {
		return p
	}
	return nil
}

// SensitivePaths returns the x-gdpr-sensitive paths of urn's schema, or
// nil when it has none or no schema. A Registry is thus a gdpr.PathSource:
// pass it to gdpr.NewProtector.
func (r *Registry) SensitivePaths(urn string) *gdpr.Paths {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.sensitive[urn]
}

// Package schema validates the data object of BabelQueue messages against
// a draft-07 JSON Schema registered for their URN. A *Registry is a
// babelqueue.PayloadValidator: pass it to babelqueue.WithPayloadValidator
// and an App refuses to publish an invalid payload and dead-letters a
// consumed one (reason invalid_payload) without retrying it. URNs without
// a schema are not checked. It is also a gdpr.PathSource: the properties
// its schemas mark x-gdpr-sensitive are the fields a gdpr.Protector
// encrypts (see SensitivePaths).
package schema

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path"
	"sort"
	"strings"
	"sync"

	babelqueue "github.com/babelqueue/babelqueue-go/core"
	"github.com/babelqueue/babelqueue-go/core/gdpr"
	"github.com/babelqueue/babelqueue-go/core/wire"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

// ErrSchema reports a schema that cannot be read or compiled, or a URN
// registered twice.
var ErrSchema = errors.New("schema: bad schema")

// URNKey is the top-level schema keyword that names the URN of a schema
// file; without it the file name without ".json" is the URN.
const URNKey = "x-babelqueue-urn"

// Registry maps URNs to compiled schemas. It is safe for concurrent use;
// registering is meant for start-up, validating for any time.
type Registry struct {
	mu        sync.RWMutex
	schemas   map[string]*jsonschema.Schema
	sensitive map[string]*gdpr.Paths
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry {
	return &Registry{schemas: make(map[string]*jsonschema.Schema), sensitive: make(map[string]*gdpr.Paths)}
}

// Register compiles schema (a JSON document, draft-07 unless its $schema
// names another draft) and registers it for urn. A URN already registered
// is an error matching ErrSchema.
func (r *Registry) Register(urn string, schema []byte) error {
	if wire.IsBlank(urn) {
		return fmt.Errorf("%w: blank URN", ErrSchema)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(schema))
	if err != nil {
		return fmt.Errorf("%w: %s: %v", ErrSchema, urn, err)
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft7)
	loc := "mem:///" + url.PathEscape(urn) + ".json"
	if err := c.AddResource(loc, doc); err != nil {
		return fmt.Errorf("%w: %s: %v", ErrSchema, urn, err)
	}
	sch, err := c.Compile(loc)
	if err != nil {
		return fmt.Errorf("%w: %s: %v", ErrSchema, urn, err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, dup := r.schemas[urn]; dup {
		return fmt.Errorf("%w: %s registered twice", ErrSchema, urn)
	}
	r.schemas[urn] = sch
	if p := sensitiveSet(doc); p != nil {
		r.sensitive[urn] = p
	}
	return nil
}

// RegisterFS registers every *.json file under root in fsys (recursively).
// A file's URN is its top-level "x-babelqueue-urn" string when present,
// else its base name without ".json" (for example
// "urn:babel:orders:created.json").
func (r *Registry) RegisterFS(fsys fs.FS, root string) error {
	return fs.WalkDir(fsys, root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return fmt.Errorf("%w: %v", ErrSchema, err)
		}
		if d.IsDir() || !strings.HasSuffix(p, ".json") {
			return nil
		}
		b, err := fs.ReadFile(fsys, p)
		if err != nil {
			return fmt.Errorf("%w: %v", ErrSchema, err)
		}
		urn, err := urnOf(p, b)
		if err != nil {
			return err
		}
		return r.Register(urn, b)
	})
}

// RegisterDir registers every *.json file under directory dir (see
// RegisterFS).
func (r *Registry) RegisterDir(dir string) error {
	return r.RegisterFS(os.DirFS(dir), ".")
}

func urnOf(p string, b []byte) (string, error) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		return "", fmt.Errorf("%w: %s: %v", ErrSchema, p, err)
	}
	if obj, ok := doc.(map[string]any); ok {
		if v, ok := obj[URNKey]; ok {
			s, ok := v.(string)
			if !ok || wire.IsBlank(s) {
				return "", fmt.Errorf("%w: %s: %s is not a URN string", ErrSchema, p, URNKey)
			}
			return s, nil
		}
	}
	return strings.TrimSuffix(path.Base(p), ".json"), nil
}

// URNs returns the registered URNs, sorted.
func (r *Registry) URNs() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := make([]string, 0, len(r.schemas))
	for u := range r.schemas {
		out = append(out, u)
	}
	sort.Strings(out)
	return out
}

// Has reports whether urn has a schema.
func (r *Registry) Has(urn string) bool {
	r.mu.RLock()
	defer r.mu.RUnlock()
	_, ok := r.schemas[urn]
	return ok
}

// ValidatePayload checks data (the raw JSON of an envelope's data object)
// against urn's schema. It returns nil when the URN has no schema or the
// data is valid, else a *ValidationError (matching
// babelqueue.ErrInvalidPayload) listing every violation. Numbers are
// compared exactly, so a large integer is not rounded through float64.
func (r *Registry) ValidatePayload(urn string, data []byte) error {
	r.mu.RLock()
	sch := r.schemas[urn]
	r.mu.RUnlock()
	if sch == nil {
		return nil
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
	if err != nil {
		return &ValidationError{URN: urn, Problems: []string{"data is not JSON: " + err.Error()}}
	}
	err = sch.Validate(v)
	if err == nil {
		return nil
	}
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return &ValidationError{URN: urn, Problems: []string{err.Error()}}
	}
	return &ValidationError{URN: urn, Problems: problems(ve)}
}

// problems flattens a validation error into "instance location: message"
// lines, the innermost causes only.
func problems(ve *jsonschema.ValidationError) []string {
	out := ve.BasicOutput()
	var lines []string
	for _, u := range out.Errors {
		if u.Error == nil {
			continue
		}
		loc := u.InstanceLocation
		if loc == "" {
			loc = "/"
		}
		lines = append(lines, loc+": "+u.Error.String())
	}
	if len(lines) == 0 {
		lines = []string{ve.Error()}
	}
	return lines
}

// ValidationError is an invalid payload: the URN and every violation.
type ValidationError struct {
	URN      string
	Problems []string
}

// Error lists the violations on one line.
func (e *ValidationError) Error() string {
	return "payload of " + e.URN + " fails its schema: " + strings.Join(e.Problems, "; ")
}

// Is makes a ValidationError match babelqueue.ErrInvalidPayload.
func (e *ValidationError) Is(target error) bool { return target == babelqueue.ErrInvalidPayload }

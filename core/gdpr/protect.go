package gdpr

import (
	"bytes"
	"errors"
	"fmt"
	"slices"

	"github.com/babelqueue/babelqueue-go/core/wire"
)

// Paths is a set of sensitive paths ("email", "profile.full_name",
// "addresses[].line"; see wire.FieldPath), parsed once. The zero value and
// nil are the empty set. It is immutable, so safe for concurrent use.
type Paths struct {
	list []wire.FieldPath
	set  *wire.FieldSet
}

// NewPaths parses paths into a set, sorted and without duplicates; the
// root path "" is dropped, as it addresses nothing.
func NewPaths(paths ...string) *Paths {
	s := slices.Clone(paths)
	slices.Sort(s)
	s = slices.Compact(s)
	out := &Paths{list: make([]wire.FieldPath, 0, len(s))}
	for _, p := range s {
		if fp := wire.ParseFieldPath(p); !fp.IsRoot() {
			out.list = append(out.list, fp)
		}
	}
	out.set = wire.NewFieldSet(out.list...)
	return out
}

// Len returns the number of paths in the set.
func (p *Paths) Len() int {
	if p == nil {
		return 0
	}
	return len(p.list)
}

// Strings returns the paths, sorted.
func (p *Paths) Strings() []string {
	if p == nil {
		return nil
	}
	out := make([]string, len(p.list))
	for i, fp := range p.list {
		out[i] = fp.String()
	}
	return out
}

func (p *Paths) fields() []wire.FieldPath {
	if p == nil {
		return nil
	}
	return p.list
}

func (p *Paths) fieldSet() *wire.FieldSet {
	if p == nil || p.set == nil {
		return wire.NewFieldSet()
	}
	return p.set
}

// Protect returns data (a JSON object) with every value at one of paths
// replaced by the JSON string c.Encrypt returns for the value's JSON text.
// No other byte changes; a path absent from data is skipped, and a value
// inside another marked value is encrypted with it. data that is not a
// JSON object fails with an error matching wire.ErrInvalidData; a cipher
// error is returned as is and nothing is returned with it.
func Protect(data []byte, paths *Paths, c Cipher) ([]byte, error) {
	if paths.Len() == 0 {
		return data, nil
	}
	if c == nil {
		return nil, fmt.Errorf("%w: no cipher", ErrKey)
	}
	return paths.fieldSet().Replace(data, protectFn(c))
}

// protectFn returns the FieldSet.Replace function that encrypts a value.
func protectFn(c Cipher) func(dst, v []byte) ([]byte, bool, error) {
	if a, ok := c.(*AESGCM); ok {
		// The reference cipher writes its base64 straight into the result,
		// sealing every value in one scratch buffer.
		var scratch []byte
		return func(dst, v []byte) ([]byte, bool, error) {
			out, buf, err := a.appendSealedJSON(dst, scratch, v)
			scratch = buf
			if err != nil {
				return dst, false, err
			}
			return out, true, nil
		}
	}
	return func(dst, v []byte) ([]byte, bool, error) {
		ct, err := c.Encrypt(v)
		if err != nil {
			return dst, false, fmt.Errorf("gdpr: encrypting a protected field: %w", err)
		}
		return wire.AppendJSONString(dst, ct), true, nil
	}
}

// Unprotect reverses Protect: every string at one of paths is decrypted
// and replaced by the JSON text it holds. A value that is not a string is
// left as it is, so running Unprotect twice changes nothing the second
// time; a path absent from data is skipped. A string c cannot open, or
// whose plaintext is not one JSON value, fails with an error matching
// ErrDecrypt. No other byte of data changes.
func Unprotect(data []byte, paths *Paths, c Cipher) ([]byte, error) {
	if paths.Len() == 0 {
		return data, nil
	}
	if c == nil {
		return nil, fmt.Errorf("%w: %w: no cipher", ErrDecrypt, ErrKey)
	}
	return paths.fieldSet().Replace(data, unprotectFn(c))
}

// unprotectFn returns the FieldSet.Replace function that decrypts a
// string.
func unprotectFn(c Cipher) func(dst, v []byte) ([]byte, bool, error) {
	return func(dst, v []byte) ([]byte, bool, error) {
		if v[0] != '"' {
			return dst, false, nil
		}
		pt, ok, err := open(v, c)
		return append(dst, pt...), ok, err
	}
}

// open decrypts the JSON string token v.
func open(v []byte, c Cipher) ([]byte, bool, error) {
	var ct string
	if bytes.IndexByte(v, '\\') < 0 {
		ct = string(v[1 : len(v)-1])
	} else {
		s, ok := wire.UnquoteJSONString(v)
		if !ok {
			return nil, false, fmt.Errorf("%w: not a JSON string", ErrDecrypt)
		}
		ct = s
	}
	pt, err := c.Decrypt(ct)
	if err != nil {
		if errors.Is(err, ErrDecrypt) {
			return nil, false, err
		}
		return nil, false, fmt.Errorf("%w: %w", ErrDecrypt, err)
	}
	if !wire.ValidJSONValue(pt) {
		return nil, false, fmt.Errorf("%w: the decrypted value is not JSON", ErrDecrypt)
	}
	return pt, true, nil
}

// FieldProtector encrypts the personal fields of a message's data object
// and decrypts them again. babelqueue.WithFieldProtector takes one, and
// Protector is the one fed by schema marks. Both methods return the whole
// data object and must change no byte of it but the protected values;
// they must be safe for concurrent use.
type FieldProtector interface {
	// ProtectFields returns data with the sensitive fields of urn
	// encrypted.
	ProtectFields(urn string, data []byte) ([]byte, error)
	// UnprotectFields returns data with the sensitive fields of urn
	// decrypted; it fails for a value it cannot open.
	UnprotectFields(urn string, data []byte) ([]byte, error)
}

// PathSource gives the sensitive paths of a URN; nil or an empty set when
// it has none. schema.Registry is one.
type PathSource interface {
	SensitivePaths(urn string) *Paths
}

// PathsByURN is a PathSource held in a map, for services that declare
// their sensitive paths in code.
type PathsByURN map[string]*Paths

// SensitivePaths returns the paths of urn.
func (m PathsByURN) SensitivePaths(urn string) *Paths { return m[urn] }

// Protector protects and unprotects the data of messages by the sensitive
// paths of their URN; babelqueue.WithFieldProtector takes one. It is safe
// for concurrent use.
type Protector struct {
	src     PathSource
	cipher  Cipher
	subject *subjectKeys
}

type subjectKeys struct {
	path wire.FieldPath
	keys func(subject string) (Cipher, error)
}

// ProtectorOption configures a Protector.
type ProtectorOption func(*Protector) error

// WithSubjectKeys picks the cipher of each message by its data subject,
// the value at path field. A string, or a number taken as written, is
// passed to keys, whose cipher protects and unprotects that message. It is
// the crypto-shredding pattern: with one key per subject, deleting a
// subject's key leaves its protected fields unreadable in every retained
// message, retries and dead letters included. The field must not be
// sensitive itself. A message without the field uses the Protector's
// default cipher, or fails when there is none. When keys fails on the
// consuming side (the key was deleted) the error matches ErrDecrypt.
func WithSubjectKeys(field string, keys func(subject string) (Cipher, error)) ProtectorOption {
	return func(p *Protector) error {
		fp := wire.ParseFieldPath(field)
		switch {
		case fp.IsRoot():
			return fmt.Errorf("%w: the subject field is empty", ErrKey)
		case keys == nil:
			return fmt.Errorf("%w: the subject key function is nil", ErrKey)
		}
		p.subject = &subjectKeys{path: fp, keys: keys}
		return nil
	}
}

// NewProtector returns a Protector that reads the sensitive paths of each
// URN from src and encrypts with c (nil only with WithSubjectKeys). Every
// problem of its arguments is reported, joined.
func NewProtector(src PathSource, c Cipher, opts ...ProtectorOption) (*Protector, error) {
	p := &Protector{src: src, cipher: c}
	var errs []error
	if src == nil {
		errs = append(errs, fmt.Errorf("%w: the path source is nil", ErrKey))
	}
	for _, o := range opts {
		if o == nil {
			continue
		}
		if err := o(p); err != nil {
			errs = append(errs, err)
		}
	}
	if c == nil && p.subject == nil {
		errs = append(errs, fmt.Errorf("%w: no cipher and no subject keys", ErrKey))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return p, nil
}

// ProtectFields returns data with the sensitive fields of urn encrypted
// (see Protect).
func (p *Protector) ProtectFields(urn string, data []byte) ([]byte, error) {
	paths := p.src.SensitivePaths(urn)
	if paths.Len() == 0 {
		return data, nil
	}
	c, err := p.cipherFor(paths, data)
	if err != nil {
		return nil, err
	}
	return Protect(data, paths, c)
}

// UnprotectFields returns data with the sensitive fields of urn decrypted
// (see Unprotect); its errors match ErrDecrypt.
func (p *Protector) UnprotectFields(urn string, data []byte) ([]byte, error) {
	paths := p.src.SensitivePaths(urn)
	if paths.Len() == 0 {
		return data, nil
	}
	c, err := p.cipherFor(paths, data)
	if err != nil {
		if errors.Is(err, ErrDecrypt) {
			return nil, err
		}
		return nil, fmt.Errorf("%w: %w", ErrDecrypt, err)
	}
	return Unprotect(data, paths, c)
}

// ProtectEnvelope returns env with the sensitive fields of urn encrypted,
// or env itself when there are none. It is ProtectFields without copying
// data in and out; the App uses it when its protector is a Protector.
func (p *Protector) ProtectEnvelope(urn string, env *wire.Envelope) (*wire.Envelope, error) {
	paths := p.src.SensitivePaths(urn)
	if paths.Len() == 0 {
		return env, nil
	}
	c, err := p.envelopeCipher(paths, env)
	if err != nil {
		return nil, err
	}
	return env.ReplaceDataFields(paths.fieldSet(), protectFn(c))
}

// UnprotectEnvelope returns env with the sensitive fields of urn
// decrypted, or env itself when nothing was protected; its errors match
// ErrDecrypt.
func (p *Protector) UnprotectEnvelope(urn string, env *wire.Envelope) (*wire.Envelope, error) {
	paths := p.src.SensitivePaths(urn)
	if paths.Len() == 0 {
		return env, nil
	}
	c, err := p.envelopeCipher(paths, env)
	if err != nil {
		if errors.Is(err, ErrDecrypt) {
			return nil, err
		}
		return nil, fmt.Errorf("%w: %w", ErrDecrypt, err)
	}
	return env.ReplaceDataFields(paths.fieldSet(), unprotectFn(c))
}

// envelopeCipher is cipherFor of env's data, read only with subject keys.
func (p *Protector) envelopeCipher(paths *Paths, env *wire.Envelope) (Cipher, error) {
	if p.subject == nil {
		if p.cipher == nil {
			return nil, fmt.Errorf("%w: no cipher", ErrKey)
		}
		return p.cipher, nil
	}
	return p.cipherFor(paths, env.Data())
}

// cipherFor returns the cipher of a message with data.
func (p *Protector) cipherFor(paths *Paths, data []byte) (Cipher, error) {
	if p.subject == nil {
		return p.cipher, nil
	}
	for _, fp := range paths.fields() {
		if fp.String() == p.subject.path.String() {
			return nil, fmt.Errorf("%w: the subject field %s is itself sensitive", ErrKey, fp)
		}
	}
	subject, ok, err := fieldText(data, p.subject.path)
	if err != nil {
		return nil, err
	}
	if !ok {
		if p.cipher == nil {
			return nil, fmt.Errorf("%w: no subject field %s to choose a key by", ErrKey, p.subject.path)
		}
		return p.cipher, nil
	}
	c, err := p.subject.keys(subject)
	if err != nil {
		return nil, fmt.Errorf("gdpr: the key of subject %q: %w", subject, err)
	}
	if c == nil {
		return nil, fmt.Errorf("%w: no key for subject %q", ErrKey, subject)
	}
	return c, nil
}

// fieldText returns the value at path in data as text: a string's value,
// a number as written; ok is false when the path is absent or holds
// another type.
func fieldText(data []byte, path wire.FieldPath) (string, bool, error) {
	var (
		out   string
		found bool
	)
	_, err := wire.ReplaceFields(data, []wire.FieldPath{path}, func(v []byte) ([]byte, bool, error) {
		switch c := v[0]; {
		case c == '"':
			out, found = wire.UnquoteJSONString(v)
		case c == '-' || (c >= '0' && c <= '9'):
			out, found = string(v), true
		}
		return nil, false, nil
	})
	if err != nil {
		return "", false, err
	}
	return out, found, nil
}

var _ FieldProtector = (*Protector)(nil)

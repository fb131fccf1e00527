package conformance

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"sort"
)

// ManifestFile is the name of a suite's manifest inside its directory.
const ManifestFile = "manifest.json"

// ErrSuite reports a suite that cannot be loaded or a block that is malformed.
var ErrSuite = errors.New("conformance: bad suite")

// Suite is a loaded suite directory. Fixture files are read lazily from FS.
type Suite struct {
	// Name says where the suite came from: EmbeddedSuite for DefaultSuite,
	// the directory for LoadDir, "" for Load.
	Name string
	// Digest is the SHA-256 (hex) of manifest.json.
	Digest string
	// FS holds manifest.json and every file the manifest names.
	FS fs.FS
	// Blocks lists the manifest's blocks in manifest order.
	Blocks []Block
	// Manifest is the parsed manifest, top-level key by key.
	Manifest map[string]json.RawMessage
}

// Block is one block of a manifest.
type Block struct {
	// ID is the block's path in the manifest, e.g. "kafka.property_projection".
	ID string
	// Raw is the block's JSON.
	Raw json.RawMessage
}

// metadataKeys are top-level manifest keys that describe the suite rather
// than hold cases.
var metadataKeys = map[string]bool{"schema_version": true, "description": true, "$comment": true}

// LoadDir loads the suite in directory dir.
func LoadDir(dir string) (*Suite, error) {
	s, err := Load(os.DirFS(dir))
	if err != nil {
		return nil, err
	}
	s.Name = dir
	return s, nil
}

// Load loads the suite whose manifest.json is at the root of fsys.
func Load(fsys fs.FS) (*Suite, error) {
	raw, err := fs.ReadFile(fsys, ManifestFile)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrSuite, err)
	}
	keys, top, err := orderedObject(raw)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrSuite, ManifestFile, err)
	}
	sum := sha256.Sum256(raw)
	s := &Suite{FS: fsys, Manifest: top, Digest: hex.EncodeToString(sum[:])}
	for _, k := range keys {
		if metadataKeys[k] {
			continue
		}
		v := top[k]
		switch firstByte(v) {
		case '[':
			s.Blocks = append(s.Blocks, Block{ID: k, Raw: v})
		case '{':
			subKeys, sub, err := orderedObject(v)
			if err != nil {
				return nil, fmt.Errorf("%w: %s: %v", ErrSuite, k, err)
			}
			if _, ok := sub["cases"]; ok {
				s.Blocks = append(s.Blocks, Block{ID: k, Raw: v})
				continue
			}
			for _, sk := range subKeys {
				if metadataKeys[sk] {
					continue
				}
				if c := firstByte(sub[sk]); c == '{' || c == '[' {
					s.Blocks = append(s.Blocks, Block{ID: k + "." + sk, Raw: sub[sk]})
				}
			}
		}
	}
	return s, nil
}

// ReadFile reads a file the manifest names, relative to the suite root.
func (s *Suite) ReadFile(name string) ([]byte, error) {
	b, err := fs.ReadFile(s.FS, path.Clean(name))
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrSuite, err)
	}
	return b, nil
}

// CaseCount returns the number of cases of a block: the length of its
// "cases" array (or of the block itself when it is an array), else 1.
func (b Block) CaseCount() int {
	var arr []json.RawMessage
	if json.Unmarshal(b.Raw, &arr) == nil {
		return max(len(arr), 1)
	}
	var obj struct {
		Cases []json.RawMessage `json:"cases"`
	}
	if json.Unmarshal(b.Raw, &obj) == nil && len(obj.Cases) > 0 {
		return len(obj.Cases)
	}
	return 1
}

// orderedObject parses a JSON object and returns its keys in document order.
func orderedObject(raw []byte) ([]string, map[string]json.RawMessage, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, nil, err
	}
	if m == nil {
		return nil, nil, errors.New("not a JSON object")
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	pos := make(map[string]int64, len(m))
	if _, err := dec.Token(); err != nil { // the opening brace
		return nil, nil, err
	}
	for dec.More() {
		off := dec.InputOffset()
		tok, err := dec.Token()
		if err != nil {
			return nil, nil, err
		}
		if k, ok := tok.(string); ok {
			if _, seen := pos[k]; !seen {
				pos[k] = off
			}
		}
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return nil, nil, err
		}
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return pos[keys[i]] < pos[keys[j]] })
	return keys, m, nil
}

func firstByte(raw []byte) byte {
	for _, c := range raw {
		switch c {
		case ' ', '\t', '\n', '\r':
		default:
			return c
		}
	}
	return 0
}

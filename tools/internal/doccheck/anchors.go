// Package doccheck checks the repository's documentation against itself:
// every reference into a design document names a heading that exists, and
// the doc comment of every exported identifier opens with a short sentence.
package doccheck

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"unicode"
)

// ErrStale marks a reference to a design-document section that does not exist.
var ErrStale = errors.New("stale design-document reference")

// designRef matches a reference to a design document: the document's path,
// optionally followed by a quoted heading name, a numbered section or an
// anchor of a Markdown link.
var designRef = regexp.MustCompile(`((?:[A-Za-z0-9_.-]+/)*DESIGN\.md)(?:\)?(#[a-z0-9-]+))?(?:\)?,? (?:(?:"([^"]+)")|(?:sections? ?\d)|(?:§ ?\d)))?`)

// moreNames matches the next heading name of a list that follows a
// reference: `, "Group member reader" and "Revocation and Close"`.
var moreNames = regexp.MustCompile(`^(?:,? and|,? or|,) "([^"]+)"`)

// sectionNumber matches the number that opens a numbered heading ("2. ").
var sectionNumber = regexp.MustCompile(`^\s*\d+(\.\d+)*\.?\s+`)

// localLink matches a Markdown link to a heading of the same document.
var localLink = regexp.MustCompile(`\]\((#[a-z0-9-]+)\)`)

// Anchors reads every .go, .md and .sh file and Makefile under root and reports each
// reference into a DESIGN.md whose document or heading does not exist.
//
// A reference names its section by heading, in one of three forms:
// `kafka/DESIGN.md, "Acknowledgement ledger"` in prose and comments,
// `[text](kafka/DESIGN.md#acknowledgement-ledger)` as a Markdown link, and
// `[text](#acknowledgement-ledger)` inside a design document. A path with
// a directory must name an existing document; the file name alone names
// the nearest one in the file's directory or above it. A numbered section
// ("section 3", or a section sign and a number) is reported too: numbers
// change when a document is reorganised, names rarely do. Anchors returns
// the number of references it checked.
func Anchors(root string) (int, error) {
	docs := map[string]*headings{}
	load := func(path string) (*headings, error) {
		if h, ok := docs[path]; ok {
			return h, nil
		}
		b, err := os.ReadFile(path)
		if errors.Is(err, fs.ErrNotExist) {
			docs[path] = nil
			return nil, nil
		}
		if err != nil {
			return nil, err
		}
		h := parseHeadings(string(b))
		docs[path] = h
		return h, nil
	}
	var errs []error
	n := 0
	err := walk(root, func(path, rel string) error {
		ext := filepath.Ext(path)
		switch {
		case ext == ".go", ext == ".md", ext == ".sh", filepath.Base(path) == "Makefile":
		default:
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		text, lineOf := flatten(string(b), commentMark(path))
		for _, m := range designRef.FindAllStringSubmatchIndex(text, -1) {
			n++
			ref := text[m[2]:m[3]]
			doc := resolve(root, path, ref)
			line := lineOf(m[0])
			h, err := load(doc)
			if err != nil {
				return err
			}
			if h == nil && ref == "DESIGN.md" && m[4] < 0 && m[6] < 0 && m[1]-m[0] == len(ref) {
				continue // a bare mention of design documents in general
			}
			if h == nil {
				errs = append(errs, fmt.Errorf("%w: %s:%d names %s, which does not exist", ErrStale, rel, line, ref))
				continue
			}
			whole := text[m[0]:m[1]]
			switch {
			case m[4] >= 0:
				if a := text[m[4]+1 : m[5]]; !h.anchors[a] {
					errs = append(errs, fmt.Errorf("%w: %s:%d links %s#%s, which has no such heading", ErrStale, rel, line, ref, a))
				}
			case m[6] >= 0:
				names := []string{text[m[6]:m[7]]}
				for rest := text[m[1]:]; ; {
					more := moreNames.FindStringSubmatchIndex(rest)
					if more == nil {
						break
					}
					names = append(names, rest[more[2]:more[3]])
					rest = rest[more[1]:]
				}
				for _, name := range names {
					if !h.names[normal(name)] {
						errs = append(errs, fmt.Errorf("%w: %s:%d names %s, %q, which has no such heading", ErrStale, rel, line, ref, name))
					}
				}
			case strings.Contains(whole, "section") || strings.Contains(whole, "§"):
				errs = append(errs, fmt.Errorf("%w: %s:%d refers to a numbered section of %s; name its heading in quotes instead", ErrStale, rel, line, ref))
			}
		}
		if ext == ".md" {
			var self *headings
			for _, m := range localLink.FindAllStringSubmatchIndex(text, -1) {
				n++
				if self == nil {
					self = parseHeadings(string(b))
				}
				if a := text[m[2]+1 : m[3]]; !self.anchors[a] {
					errs = append(errs, fmt.Errorf("%w: %s:%d links #%s, which has no such heading", ErrStale, rel, lineOf(m[0]), a))
				}
			}
		}
		return nil
	})
	if err != nil {
		return n, err
	}
	return n, errors.Join(errs...)
}

// resolve returns the file a reference found in path names: a bare
// DESIGN.md is the nearest one in path's directory or above it (within
// root); a path with a directory is read from root, else from path's
// directory.
func resolve(root, path, ref string) string {
	if ref == "DESIGN.md" {
		for dir := filepath.Dir(path); ; dir = filepath.Dir(dir) {
			p := filepath.Join(dir, ref)
			if _, err := os.Stat(p); err == nil {
				return p
			}
			if r, err := filepath.Rel(root, dir); err != nil || r == "." || strings.HasPrefix(r, "..") {
				return filepath.Join(filepath.Dir(path), ref)
			}
		}
	}
	if p := filepath.Join(root, ref); fileExists(p) {
		return p
	}
	return filepath.Join(filepath.Dir(path), ref)
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// headings holds the headings of a Markdown document by normalised name
// and by GitHub anchor.
type headings struct {
	names   map[string]bool
	anchors map[string]bool
}

func parseHeadings(md string) *headings {
	h := &headings{names: map[string]bool{}, anchors: map[string]bool{}}
	fence := false
	for _, line := range strings.Split(md, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fence = !fence
			continue
		}
		if fence || !strings.HasPrefix(line, "#") {
			continue
		}
		title := strings.TrimSpace(strings.TrimLeft(line, "#"))
		h.names[normal(title)] = true
		// "Settle (settle.go)" is also named "Settle", and "Claim on
		// PostgreSQL: key-bucket locks" also "Claim on PostgreSQL".
		if i := strings.LastIndex(title, " ("); i > 0 && strings.HasSuffix(title, ")") {
			h.names[normal(title[:i])] = true
		}
		if short, _, ok := strings.Cut(title, ": "); ok {
			h.names[normal(short)] = true
		}
		h.anchors[anchor(title)] = true
	}
	return h
}

// normal is a heading name as a reference may spell it: without a leading
// section number, Markdown code marks and repeated spaces, in lower case.
func normal(s string) string {
	s = strings.ReplaceAll(s, "`", "")
	s = sectionNumber.ReplaceAllString(s, "")
	return strings.ToLower(strings.Join(strings.Fields(s), " "))
}

// anchor is the GitHub anchor of a heading: lower case, letters, digits,
// hyphens and underscores kept, spaces turned into hyphens.
func anchor(title string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(title) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r > 0x7f && unicode.IsLetter(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// commentMark is the comment marker of the file at path: "//" for Go, "#"
// for shell scripts and the Makefile, none for Markdown.
func commentMark(path string) string {
	switch filepath.Ext(path) {
	case ".go":
		return "//"
	case ".md":
		return ""
	}
	return "#"
}

// flatten joins the lines of a file into one text so that a reference
// broken over two lines is found whole: only comments are kept, without
// their marker, when mark is given, and each line break becomes a space. lineOf maps an offset of the
// text back to its line number.
func flatten(src string, mark string) (string, func(int) int) {
	lines := strings.Split(src, "\n")
	var b strings.Builder
	starts := make([]int, 0, len(lines))
	for _, l := range lines {
		if mark != "" {
			t := strings.TrimSpace(l)
			if c, ok := strings.CutPrefix(t, mark); ok {
				l = strings.TrimPrefix(c, " ")
			} else if i := strings.Index(l, mark+" "); i >= 0 {
				l = l[i+len(mark)+1:]
			} else {
				l = ""
			}
		}
		starts = append(starts, b.Len())
		b.WriteString(strings.TrimRight(l, " \t"))
		b.WriteByte(' ')
	}
	return b.String(), func(off int) int {
		lo, hi := 0, len(starts)
		for lo+1 < hi {
			mid := (lo + hi) / 2
			if starts[mid] <= off {
				lo = mid
			} else {
				hi = mid
			}
		}
		return lo + 1
	}
}

// walk calls fn for each regular file under root, skipping hidden
// directories, testdata and directories starting with an underscore.
func walk(root string, fn func(path, rel string) error) error {
	return filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			name := d.Name()
			if path != root && (strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") || name == "testdata" || name == "node_modules") {
				return filepath.SkipDir
			}
			return nil
		}
		rel, _ := filepath.Rel(root, path)
		return fn(path, rel)
	})
}

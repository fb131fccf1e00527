package readme

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// citation matches a rule cited as "CONTRACT.md 6.4" (or a range's first
// end, "CONTRACT.md 2.6–2.8", and its last).
var citation = regexp.MustCompile(`CONTRACT\.md (\d+(?:\.\d+)?)(?:–(\d+(?:\.\d+)?))?`)

// unfollowable matches references a reader of the repository cannot
// follow: section signs and SPEC numbers of a document the repository
// does not hold, and decision records it does not hold.
var unfollowable = regexp.MustCompile(`(?:^|[^0-9A-Za-z] ?)§\s?\d|\bSPEC §?\d|\bADR-\d`)

// publicSection is a section sign of a public document named before it.
var publicSection = regexp.MustCompile(`RFC \d+ §\d`)

// ContractSections returns the rule numbers CONTRACT.md defines: its
// "## N." headings and its "- **N.M" items.
func ContractSections(contract []byte) map[string]bool {
	heading := regexp.MustCompile(`^## (\d+)\. `)
	item := regexp.MustCompile(`^- \*\*(\d+\.\d+) `)
	out := map[string]bool{}
	for _, line := range strings.Split(string(contract), "\n") {
		if m := heading.FindStringSubmatch(line); m != nil {
			out[m[1]] = true
		}
		if m := item.FindStringSubmatch(line); m != nil {
			out[m[1]] = true
		}
	}
	return out
}

// CheckCitations reads every .go, .md and .json file under root (as
// Modules skips directories) and reports each "CONTRACT.md N" that names
// no rule of CONTRACT.md and each reference a reader cannot follow (a
// section sign or SPEC number without a public document, an ADR number).
// It returns the number of citations checked.
func CheckCitations(root string) (int, error) {
	contract, err := os.ReadFile(filepath.Join(root, "CONTRACT.md"))
	if err != nil {
		return 0, err
	}
	rules := ContractSections(contract)
	n := 0
	var errs []error
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			name := d.Name()
			if path != root && (strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") || name == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		switch filepath.Ext(path) {
		case ".go", ".md", ".json":
		default:
			return nil
		}
		rel, _ := filepath.Rel(root, path)
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		defer f.Close()
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 64<<10), 4<<20)
		for line := 1; sc.Scan(); line++ {
			text := sc.Text()
			for _, m := range citation.FindAllStringSubmatch(text, -1) {
				for _, sec := range m[1:] {
					if sec == "" {
						continue
					}
					n++
					if !rules[sec] {
						errs = append(errs, fmt.Errorf("%w: %s:%d cites CONTRACT.md %s, which CONTRACT.md does not define", ErrStale, rel, line, sec))
					}
				}
			}
			if rel != "CONTRACT.md" && unfollowable.MatchString(publicSection.ReplaceAllString(text, "")) {
				errs = append(errs, fmt.Errorf("%w: %s:%d cites a document the repository does not hold (state the rule, or cite CONTRACT.md): %s", ErrStale, rel, line, strings.TrimSpace(text)))
			}
		}
		return sc.Err()
	})
	if err != nil {
		return n, err
	}
	return n, errors.Join(errs...)
}

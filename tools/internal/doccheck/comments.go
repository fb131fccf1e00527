package doccheck

import (
	"fmt"
	"go/ast"
	"go/doc"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// MaxFirstSentence is the most words the first sentence of a doc comment
// may have.
const MaxFirstSentence = 25

// MaxAsides is the most parenthetical groups the first sentence of a doc
// comment may hold; a call's empty parentheses do not count.
const MaxAsides = 1

// Finding is an exported identifier whose doc comment opens with a first
// sentence over the word limit or with a chain of parenthetical asides.
type Finding struct {
	File   string // the file, relative to the root
	Line   int    // the line of the declaration
	Name   string // the identifier, Type.Method for a method
	Words  int    // words in the first sentence
	Asides int    // parenthetical groups in the first sentence
}

func (f Finding) String() string {
	if f.Asides > MaxAsides {
		return fmt.Sprintf("%s:%d: %s: first sentence has %d parenthetical asides (at most %d)", f.File, f.Line, f.Name, f.Asides, MaxAsides)
	}
	return fmt.Sprintf("%s:%d: %s: first sentence has %d words (at most %d)", f.File, f.Line, f.Name, f.Words, MaxFirstSentence)
}

// asides counts the parenthetical groups of s, not the empty parentheses
// of a call such as slog.Default().
func asides(s string) int {
	return strings.Count(s, "(") - strings.Count(s, "()")
}

// Stats counts the doc comments FirstSentences read.
type Stats struct {
	Documented int // exported identifiers with a doc comment
	Words      []int
}

// FirstSentences reads the non-test Go files of each package directory in
// dirs (relative to root, not recursive) and returns every exported
// identifier whose doc comment's first sentence has more than max words or
// more than MaxAsides parenthetical groups: functions, types, methods of
// exported types, constants and variables.
// A constant or variable without a comment of its own is judged by its
// group's comment. The first sentence ends, as go/doc reads it, at the
// first period followed by a space that is not preceded by a single
// capital letter.
func FirstSentences(root string, dirs []string, max int) ([]Finding, Stats, error) {
	var out []Finding
	var st Stats
	for _, dir := range dirs {
		fset := token.NewFileSet()
		pkgs, err := parseDir(fset, filepath.Join(root, dir))
		if err != nil {
			return nil, st, err
		}
		for pkgName, files := range pkgs {
			if strings.HasSuffix(pkgName, "_test") {
				continue
			}
			var p doc.Package
			check := func(name string, cg *ast.CommentGroup, pos token.Pos) {
				if cg == nil {
					return
				}
				s := p.Synopsis(cg.Text())
				n := len(strings.Fields(s))
				if n == 0 {
					return
				}
				st.Documented++
				st.Words = append(st.Words, n)
				if a := asides(s); n > max || a > MaxAsides {
					at := fset.Position(pos)
					rel, _ := filepath.Rel(root, at.Filename)
					out = append(out, Finding{File: rel, Line: at.Line, Name: name, Words: n, Asides: a})
				}
			}
			for _, f := range files {
				for _, decl := range f.Decls {
					switch d := decl.(type) {
					case *ast.FuncDecl:
						if !d.Name.IsExported() {
							continue
						}
						name := d.Name.Name
						if d.Recv != nil && len(d.Recv.List) == 1 {
							recv := receiverName(d.Recv.List[0].Type)
							if !ast.IsExported(recv) {
								continue
							}
							name = recv + "." + name
						}
						check(name, d.Doc, d.Pos())
					case *ast.GenDecl:
						for _, spec := range d.Specs {
							switch s := spec.(type) {
							case *ast.TypeSpec:
								if !s.Name.IsExported() {
									continue
								}
								cg := s.Doc
								if cg == nil && len(d.Specs) == 1 {
									cg = d.Doc
								}
								check(s.Name.Name, cg, s.Pos())
							case *ast.ValueSpec:
								exported := ""
								for _, n := range s.Names {
									if n.IsExported() {
										exported = n.Name
										break
									}
								}
								if exported == "" {
									continue
								}
								cg := s.Doc
								if cg == nil {
									if d.Doc == nil || d.Lparen.IsValid() && spec != d.Specs[0] {
										continue
									}
									cg = d.Doc
								}
								check(exported, cg, s.Pos())
							}
						}
					}
				}
			}
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].File != out[j].File {
			return out[i].File < out[j].File
		}
		return out[i].Line < out[j].Line
	})
	return out, st, nil
}

// parseDir parses the non-test Go files of dir with their comments, grouped
// by package name; build tags are not considered.
func parseDir(fset *token.FileSet, dir string) (map[string][]*ast.File, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	pkgs := map[string][]*ast.File{}
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(dir, name), nil, parser.ParseComments)
		if err != nil {
			return nil, err
		}
		pkgs[f.Name.Name] = append(pkgs[f.Name.Name], f)
	}
	return pkgs, nil
}

func receiverName(e ast.Expr) string {
	for {
		switch t := e.(type) {
		case *ast.StarExpr:
			e = t.X
		case *ast.IndexExpr:
			e = t.X
		case *ast.IndexListExpr:
			e = t.X
		case *ast.Ident:
			return t.Name
		default:
			return ""
		}
	}
}

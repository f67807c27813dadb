// Package problem is the diagnostics vocabulary of kha's pure packages:
// findings about an input, addressed to the attribute the user should
// change, with no dependency on Terraform.
package problem

import (
	"fmt"
	"slices"
	"strings"
)

// Path addresses an input attribute with the names the Terraform schema
// uses: strings are attribute names, ints are list indexes, Keys are map
// keys.
type Path []any

// Key is a map key in a Path.
type Key string

// Root starts a path at a top-level attribute.
func Root(name string) Path { return Path{name} }

// At returns the path of a nested attribute.
func (p Path) At(name string) Path { return append(p[:len(p):len(p)], name) }

// Index returns the path of a list element.
func (p Path) Index(i int) Path { return append(p[:len(p):len(p)], i) }

// Key returns the path of a map element.
func (p Path) Key(k string) Path { return append(p[:len(p):len(p)], Key(k)) }

// Within says whether p is at or under prefix.
func (p Path) Within(prefix Path) bool {
	return len(p) >= len(prefix) && slices.Equal(p[:len(prefix)], prefix)
}

func (p Path) String() string {
	var b strings.Builder
	for _, step := range p {
		switch s := step.(type) {
		case int:
			fmt.Fprintf(&b, "[%d]", s)
		case Key:
			fmt.Fprintf(&b, "[%q]", string(s))
		default:
			if b.Len() > 0 {
				b.WriteByte('.')
			}
			fmt.Fprint(&b, s)
		}
	}
	return b.String()
}

// Severity of a Problem.
type Severity int

const (
	Error Severity = iota
	Warning
)

// Problem is one finding about the input.
type Problem struct {
	Severity Severity
	Path     Path
	Summary  string
	Detail   string
	// SchemaChecked marks a finding that the Terraform schema's own
	// validators report too (a port range, an enumeration), so an adapter
	// can show it once.
	SchemaChecked bool
}

func (p Problem) String() string { return p.Path.String() + ": " + p.Summary + ": " + p.Detail }

// Problems is a list of findings.
type Problems []Problem

// HasErrors reports whether any problem is an error.
func (ps Problems) HasErrors() bool {
	for _, p := range ps {
		if p.Severity == Error {
			return true
		}
	}
	return false
}

// Errorf adds an error.
func (ps *Problems) Errorf(path Path, summary, format string, args ...any) {
	*ps = append(*ps, Problem{Severity: Error, Path: path, Summary: summary, Detail: fmt.Sprintf(format, args...)})
}

// SchemaErrorf adds an error that the schema's validators also report.
func (ps *Problems) SchemaErrorf(path Path, summary, format string, args ...any) {
	*ps = append(*ps, Problem{Severity: Error, Path: path, Summary: summary, Detail: fmt.Sprintf(format, args...), SchemaChecked: true})
}

// Warnf adds a warning.
func (ps *Problems) Warnf(path Path, summary, format string, args ...any) {
	*ps = append(*ps, Problem{Severity: Warning, Path: path, Summary: summary, Detail: fmt.Sprintf(format, args...)})
}

// Rebase returns the problems with every path passed through f, for an
// adapter whose schema nests the core's attributes differently.
func (ps Problems) Rebase(f func(Path) Path) Problems {
	out := make(Problems, len(ps))
	for i, p := range ps {
		p.Path = f(p.Path)
		out[i] = p
	}
	return out
}

// Renames move findings from the paths of a core package to the schema
// of the resource that feeds it, where the two differ: each path within
// From moves to To, the rest of it kept. The first match wins.
type Renames []struct{ From, To Path }

// Apply returns p as the schema names it.
func (r Renames) Apply(p Path) Path {
	for _, rename := range r {
		if p.Within(rename.From) {
			return append(slices.Clone(rename.To), p[len(rename.From):]...)
		}
	}
	return p
}

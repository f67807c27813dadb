package endpoints

import (
	"fmt"
	"strings"
)

// Path addresses an input attribute with the names the Terraform schema
// uses: strings are attribute names, ints are list indexes.
type Path []any

// Root starts a path at a top-level attribute.
func Root(name string) Path { return Path{name} }

// At returns the path of a nested attribute.
func (p Path) At(name string) Path { return append(p[:len(p):len(p)], name) }

// Index returns the path of a list element.
func (p Path) Index(i int) Path { return append(p[:len(p):len(p)], i) }

func (p Path) String() string {
	var b strings.Builder
	for _, step := range p {
		switch s := step.(type) {
		case int:
			fmt.Fprintf(&b, "[%d]", s)
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
	SeverityError Severity = iota
	SeverityWarning
)

// Problem is one finding about the input, addressed to the attribute the
// user should change.
type Problem struct {
	Severity Severity
	Path     Path
	Summary  string
	Detail   string
}

func (p Problem) String() string { return p.Path.String() + ": " + p.Summary + ": " + p.Detail }

// Problems is a list of findings.
type Problems []Problem

// HasErrors reports whether any problem is an error.
func (ps Problems) HasErrors() bool {
	for _, p := range ps {
		if p.Severity == SeverityError {
			return true
		}
	}
	return false
}

func (ps *Problems) errorf(path Path, summary, format string, args ...any) {
	*ps = append(*ps, Problem{Severity: SeverityError, Path: path, Summary: summary, Detail: fmt.Sprintf(format, args...)})
}

func (ps *Problems) warnf(path Path, summary, format string, args ...any) {
	*ps = append(*ps, Problem{Severity: SeverityWarning, Path: path, Summary: summary, Detail: fmt.Sprintf(format, args...)})
}

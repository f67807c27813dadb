// Package yamledit edits YAML documents in place: it finds values with
// the parser and changes the bytes of those values only, so that comments,
// key order and quoting of the rest stay as their author wrote them
// (kubeconfigs, kubeadm's ClusterConfiguration).
package yamledit

import (
	"bytes"
	"cmp"
	"errors"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Sanitize keeps YAML errors to their position: their text may quote the
// content, which may hold keys.
func Sanitize(err error) error {
	const prefix = "yaml: line "
	msg := err.Error()
	if i := strings.Index(msg[min(len(prefix), len(msg)):], ": "); strings.HasPrefix(msg, prefix) && i > 0 {
		return errors.New(msg[:len(prefix)+i])
	}
	return errors.New("the YAML does not decode")
}

// MapEntry is the key and value nodes of key in the mapping m; nil when m
// is not a mapping or has no such key.
func MapEntry(m *yaml.Node, key string) (k, v *yaml.Node) {
	if m == nil || m.Kind != yaml.MappingNode {
		return nil, nil
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i], m.Content[i+1]
		}
	}
	return nil, nil
}

// MapValue is the value node of key in the mapping m (MapEntry).
func MapValue(m *yaml.Node, key string) *yaml.Node {
	_, v := MapEntry(m, key)
	return v
}

// Edit sets the scalar Node, located in a document by the parser, to
// Value.
type Edit struct {
	Node  *yaml.Node
	Value string
}

// Replace replaces each edited scalar's text in place: the bytes of
// those values change and nothing else. It handles plain and quoted
// scalars on one line, replaced by values that fit on one line, so that
// no line moves; anything else reports !ok.
func Replace(content []byte, edits ...Edit) ([]byte, bool) {
	lines := bytes.SplitAfter(content, []byte("\n"))
	// Edits on one line (a flow mapping) are made from its end, so that
	// one edit does not move the columns of the others.
	edits = slices.Clone(edits)
	slices.SortStableFunc(edits, func(a, b Edit) int {
		return cmp.Or(cmp.Compare(b.Node.Line, a.Node.Line), cmp.Compare(b.Node.Column, a.Node.Column))
	})
	for _, e := range edits {
		n := e.Node
		if n.Line < 1 || n.Line > len(lines) || n.Column < 1 {
			return nil, false
		}
		line := string(lines[n.Line-1])
		start := ColumnOffset(line, n.Column)
		if start < 0 {
			return nil, false
		}
		end, ok := scalarEnd(line, start, n)
		if !ok {
			return nil, false
		}
		replacement, err := yaml.Marshal(&yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: e.Value, Style: chosenQuotes(n)})
		text := strings.TrimSuffix(string(replacement), "\n")
		if err != nil || strings.ContainsAny(text, "\r\n") {
			return nil, false
		}
		lines[n.Line-1] = []byte(line[:start] + text + line[end:])
	}
	return bytes.Join(lines, nil), true
}

// chosenQuotes is the quoting style of a scalar whose file quotes it by
// choice (Terraform's yamlencode quotes every value), which the value that
// replaces it keeps, so that a value set and set back gives the file back
// byte for byte. A style that is YAML's own for the value (plain, or the
// quotes it needs) says nothing of the file: 0, YAML's own for the new
// value.
func chosenQuotes(n *yaml.Node) yaml.Style {
	quotes := n.Style & (yaml.DoubleQuotedStyle | yaml.SingleQuotedStyle)
	natural, err := yaml.Marshal(n.Value)
	if quotes == 0 || err != nil {
		return 0
	}
	switch {
	case natural[0] == '\'' && quotes == yaml.SingleQuotedStyle, natural[0] == '"' && quotes == yaml.DoubleQuotedStyle:
		return 0
	}
	return quotes
}

// ColumnOffset turns the parser's 1-based column (in characters) into a
// byte offset; -1 when the line is shorter.
func ColumnOffset(line string, column int) int {
	col := 1
	for i := range line {
		if col == column {
			return i
		}
		col++
	}
	return -1
}

// scalarEnd is the byte offset just past the scalar n, which starts at
// start of line.
func scalarEnd(line string, start int, n *yaml.Node) (int, bool) {
	rest := line[start:]
	switch n.Style {
	case yaml.DoubleQuotedStyle:
		// The node starts at its anchor, if it has one: the quote must be
		// where it starts.
		if !strings.HasPrefix(rest, `"`) {
			return 0, false
		}
		for i := 1; i < len(rest); i++ {
			switch rest[i] {
			case '\\':
				i++
			case '"':
				return start + i + 1, true
			}
		}
		return 0, false
	case yaml.SingleQuotedStyle:
		if !strings.HasPrefix(rest, "'") {
			return 0, false
		}
		for i := 1; i < len(rest); i++ {
			if rest[i] == '\'' {
				if i+1 < len(rest) && rest[i+1] == '\'' {
					i++
					continue
				}
				return start + i + 1, true
			}
		}
		return 0, false
	case 0:
		// A plain scalar on one line is its value as written: it ends
		// where the value does, before a comment or, in a flow
		// collection, the "," or "}" after it. An empty one (null) has
		// no text to replace.
		if n.Value == "" || !strings.HasPrefix(rest, n.Value) {
			return 0, false
		}
		return start + len(n.Value), true
	}
	return 0, false
}

// ReplaceScalar returns content with the scalar n, located in content by
// the YAML parser, replaced by value as YAML writes it: the bytes of that
// one value change and nothing else. ok is false when n is not a
// single-line plain or quoted scalar, or value does not fit on one line;
// the caller then proves its own fallback.
func ReplaceScalar(content []byte, n *yaml.Node, value string) ([]byte, bool) {
	if n == nil || n.Kind != yaml.ScalarNode || strings.ContainsAny(value, "\r\n") {
		return nil, false
	}
	return Replace(content, Edit{Node: n, Value: value})
}

// ScalarText is value as a single-line YAML scalar (plain when YAML
// allows, quoted otherwise); ok is false when it takes more than a line.
func ScalarText(value string) (string, bool) {
	b, err := yaml.Marshal(value)
	text := strings.TrimSuffix(string(b), "\n")
	if err != nil || strings.ContainsAny(text, "\r\n") {
		return "", false
	}
	return text, true
}

// EntryLine is the line (1-based) of key's entry in the block mapping m,
// located in content by the parser, and the column of its key, when that
// line holds the entry alone: only spaces before the key, the value a
// single-line scalar on the key's line, and nothing after it but a
// comment. Such a line can be removed (DeleteLine), or have a line added
// after it (InsertLine) at the key's column, without touching any other
// entry: what an editor adding or removing a key by hand would change.
// ok is false otherwise, and when content breaks lines where the parser
// does and "\n" does not (a lone "\r", NEL, U+2028, U+2029), so that the
// parser's line numbers would name other lines.
func EntryLine(content []byte, m *yaml.Node, key string) (line, column int, ok bool) {
	if m == nil || m.Style&yaml.FlowStyle != 0 {
		return 0, 0, false
	}
	k, v := MapEntry(m, key)
	lines := Lines(content)
	if k == nil || v.Kind != yaml.ScalarNode || k.Line != v.Line || k.Line < 1 || k.Line > len(lines) || k.Column < 1 || !sameBreaks(content) {
		return 0, 0, false
	}
	text := lines[k.Line-1]
	if !LeadingSpaces(text, k.Column) {
		return 0, 0, false
	}
	start := ColumnOffset(text, v.Column)
	if start < 0 {
		return 0, 0, false
	}
	end, ok := scalarEnd(text, start, v)
	if !ok {
		return 0, 0, false
	}
	if rest := strings.TrimLeft(strings.TrimRight(text[end:], "\r\n"), " \t"); rest != "" && !strings.HasPrefix(rest, "#") {
		return 0, 0, false
	}
	return k.Line, k.Column, true
}

// InsertLine returns content with text added as a line after line after
// (1-based), ending as that line does ("\n" or "\r\n"); when that line is
// the last and has no ending, it gets the file's and text none. Lines are
// counted as EntryLine counts them; ok is false when content has no line
// after.
func InsertLine(content []byte, after int, text string) ([]byte, bool) {
	lines := Lines(content)
	if after < 1 || after > len(lines) {
		return nil, false
	}
	line := lines[after-1]
	eol := lineEnding(line)
	if eol == "" {
		eol = cmp.Or(lineEnding(lines[0]), "\n")
		line += eol
		eol = ""
	}
	return []byte(strings.Join(slices.Concat(lines[:after-1], []string{line, text + eol}, lines[after:]), "")), true
}

// DeleteLine returns content without its line (1-based), ending and
// all: with the comment at its end, which was about the entry it held.
// ok is false when content has no such line.
func DeleteLine(content []byte, line int) ([]byte, bool) {
	lines := Lines(content)
	if line < 1 || line > len(lines) {
		return nil, false
	}
	return []byte(strings.Join(slices.Delete(lines, line-1, line), "")), true
}

// Lines are content's lines, each with its line break, as the parser
// numbers them from 1 when sameBreaks holds; none for empty content.
func Lines(content []byte) []string {
	if len(content) == 0 {
		return nil
	}
	return strings.SplitAfter(string(content), "\n")
}

// LeadingSpaces says whether the text of line before column (1-based, as
// the parser counts) is spaces: the entry there starts its line.
func LeadingSpaces(line string, column int) bool {
	return column >= 1 && len(line) >= column-1 && strings.Trim(line[:column-1], " ") == ""
}

// sameBreaks says whether the parser breaks content's lines where "\n"
// does, and nowhere else.
func sameBreaks(content []byte) bool {
	s := string(content)
	return strings.Count(s, "\r") == strings.Count(s, "\r\n") && !strings.ContainsAny(s, "\u0085\u2028\u2029")
}

// lineEnding is the line break line ends with: "\r\n", "\n" or "".
func lineEnding(line string) string {
	switch {
	case strings.HasSuffix(line, "\r\n"):
		return "\r\n"
	case strings.HasSuffix(line, "\n"):
		return "\n"
	}
	return ""
}

// Package yamledit edits YAML documents in place: it finds values with
// the parser and changes the bytes of those values only, so that comments,
// key order and quoting of the rest stay as their author wrote them
// (kubeconfigs, kubeadm's ClusterConfiguration).
package yamledit

import (
	"bytes"
	"errors"
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
// scalars on one line; anything else reports !ok.
func Replace(content []byte, edits ...Edit) ([]byte, bool) {
	lines := bytes.SplitAfter(content, []byte("\n"))
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
		if err != nil {
			return nil, false
		}
		lines[n.Line-1] = []byte(line[:start] + strings.TrimSuffix(string(replacement), "\n") + line[end:])
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

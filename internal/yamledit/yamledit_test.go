package yamledit

import (
	"errors"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// parse decodes doc and returns the value node of the path of mapping
// keys.
func parse(t testing.TB, doc string, keys ...string) *yaml.Node {
	t.Helper()
	var root yaml.Node
	if err := yaml.Unmarshal([]byte(doc), &root); err != nil {
		t.Fatal(err)
	}
	n := root.Content[0]
	for _, k := range keys {
		n = MapValue(n, k)
	}
	return n
}

// TestReplaceScalar: only the value's bytes change, in the quoting the
// file chose where the file chose one.
func TestReplaceScalar(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name, doc, value, want string
		ok                     bool
	}{
		{"plain", "a:\n  server: https://10.0.0.1:6443 # the VIP\n  b: 1\n", "https://127.0.0.1:6443",
			"a:\n  server: https://127.0.0.1:6443 # the VIP\n  b: 1\n", true},
		{"double quotes kept", "a:\n  server: \"https://10.0.0.1:6443\"\n", "https://[::1]:6443",
			"a:\n  server: \"https://[::1]:6443\"\n", true},
		{"single quotes kept", "a:\n  server: 'x'\n", "y", "a:\n  server: 'y'\n", true},
		{"quotes the value needs", "a:\n  server: x\n", "a: b", "a:\n  server: 'a: b'\n", true},
		{"escaped quote inside", "a:\n  server: \"x\\\"y\" # c\n", "z", "a:\n  server: \"z\" # c\n", true},
		{"in a flow mapping, after multi-byte characters", "ä: {server: x, b: 1}\n", "y", "ä: {server: y, b: 1}\n", true},
		{"null", "a:\n  server:\n", "y", "", false},
		{"two lines", "a:\n  server: x\n", "y\nz", "", false},
		{"a block scalar", "a:\n  server: |\n    x\n", "y", "", false},
		{"quotes after an anchor", "a:\n  server: &s \"x\"\n", "y", "", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			key := "a"
			if strings.HasPrefix(c.doc, "ä") {
				key = "ä"
			}
			n := parse(t, c.doc, key, "server")
			got, ok := ReplaceScalar([]byte(c.doc), n, c.value)
			if ok != c.ok || ok && string(got) != c.want {
				t.Fatalf("got %q, %v; want %q, %v", got, ok, c.want, c.ok)
			}
			if ok && parse(t, string(got), key, "server").Value != c.value {
				t.Errorf("%q does not decode to the value set", got)
			}
		})
	}
}

// TestReplaceOnOneLine: edits on one line (a flow mapping) do not move
// each other, whatever order they come in.
func TestReplaceOnOneLine(t *testing.T) {
	t.Parallel()
	doc := "a: {server: x, tls-server-name: y} # z\n"
	server, tls := parse(t, doc, "a", "server"), parse(t, doc, "a", "tls-server-name")
	got, ok := Replace([]byte(doc), Edit{server, "https://a:1"}, Edit{tls, "b"})
	if want := "a: {server: https://a:1, tls-server-name: b} # z\n"; !ok || string(got) != want {
		t.Fatalf("got %q, %v; want %q", got, ok, want)
	}
}

// TestEntryLine: a line can be added after an entry, or the entry's line
// removed, only where the line holds that entry alone.
func TestEntryLine(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name, doc    string
		line, column int
		ok           bool
	}{
		{"block", "a:\n  b: 1\n  key: v\n", 3, 3, true},
		{"quoted, with a comment, CRLF", "a:\r\n  \"key\": 'v' # c\r\n  b: 1\r\n", 2, 3, true},
		{"after a multi-byte key", "a:\n  ä: 1\n  key: v\n", 3, 3, true},
		{"flow", "a: {key: v}\n", 0, 0, false},
		{"flow on lines", "a: {\n  key: v\n}\n", 0, 0, false},
		{"a value over lines", "a:\n  key: v\n    w\n", 0, 0, false},
		{"a block value", "a:\n  key: |\n    v\n", 0, 0, false},
		{"a null value", "a:\n  key:\n", 0, 0, false},
		{"a lone CR before", "a:\r  b: 1\n  key: v\n", 0, 0, false},
		{"U+2028 before", "x: \"\u2028\"\na:\n  key: v\n", 0, 0, false},
		{"absent", "a:\n  b: 1\n", 0, 0, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			line, column, ok := EntryLine([]byte(c.doc), parse(t, c.doc, "a"), "key")
			if line != c.line || column != c.column || ok != c.ok {
				t.Errorf("EntryLine = %d, %d, %v; want %d, %d, %v", line, column, ok, c.line, c.column, c.ok)
			}
		})
	}
}

// TestInsertAndDeleteLine: a line added ends as the line before it, and
// a line removed goes with its ending; no other byte changes.
func TestInsertAndDeleteLine(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		doc   string
		after int
		want  string
	}{
		{"a\nb\n", 1, "a\nnew\nb\n"},
		{"a\r\nb\r\n", 2, "a\r\nb\r\nnew\r\n"},
		{"a\r\nb", 2, "a\r\nb\r\nnew"},
		{"a", 1, "a\nnew"},
	} {
		got, ok := InsertLine([]byte(c.doc), c.after, "new")
		if !ok || string(got) != c.want {
			t.Errorf("InsertLine(%q, %d) = %q, %v; want %q", c.doc, c.after, got, ok, c.want)
		}
		if back, ok := DeleteLine(got, c.after+1); c.want[len(c.want)-1] == '\n' && (!ok || string(back) != c.doc) {
			t.Errorf("DeleteLine(%q, %d) = %q, %v; want %q", got, c.after+1, back, ok, c.doc)
		}
	}
	if _, ok := InsertLine([]byte("a\n"), 3, "new"); ok {
		t.Error("InsertLine after a line that is not there")
	}
	if _, ok := DeleteLine([]byte("a\n"), 0); ok {
		t.Error("DeleteLine of line 0")
	}
}

// TestColumnOffset: the parser's columns count characters, offsets bytes.
func TestColumnOffset(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		line   string
		column int
		want   int
	}{{"abc", 1, 0}, {"abc", 3, 2}, {"äbc", 2, 2}, {"abc", 4, -1}, {"", 1, -1}} {
		if got := ColumnOffset(c.line, c.column); got != c.want {
			t.Errorf("ColumnOffset(%q, %d) = %d, want %d", c.line, c.column, got, c.want)
		}
	}
}

// TestSanitize: an error keeps its position and never the content.
func TestSanitize(t *testing.T) {
	t.Parallel()
	var v any
	err := yaml.Unmarshal([]byte("token: s3cret\n  bad: [\n"), &v)
	got := Sanitize(err).Error()
	if got != "yaml: line 2" {
		t.Errorf("Sanitize(%v) = %q", err, got)
	}
	if got := Sanitize(errors.New("s3cret")).Error(); got != "the YAML does not decode" {
		t.Errorf("Sanitize of another error = %q", got)
	}
}

// FuzzReplaceScalar: a replacement decodes to the document with that one
// value changed, or reports !ok; it never panics.
func FuzzReplaceScalar(f *testing.F) {
	f.Add("a:\n  server: x\n", "y")
	f.Add("a: {server: \"x\", b: 'c'}\n", "it's")
	f.Add("a:\n  server: 'x''y' # z\n", "#")
	f.Fuzz(func(t *testing.T, doc, value string) {
		var root yaml.Node
		if yaml.Unmarshal([]byte(doc), &root) != nil || len(root.Content) == 0 {
			return
		}
		n := MapValue(MapValue(root.Content[0], "a"), "server")
		got, ok := ReplaceScalar([]byte(doc), n, value)
		if !ok {
			return
		}
		var after yaml.Node
		if err := yaml.Unmarshal(got, &after); err != nil {
			t.Fatalf("%q does not decode: %v", got, err)
		}
		if v := MapValue(MapValue(after.Content[0], "a"), "server"); v == nil || v.Value != value {
			t.Fatalf("%q: server is not %q", got, value)
		}
	})
}

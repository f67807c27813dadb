// Package clusterconfig edits the cluster's own copies of its apiserver
// endpoint: kubeadm's ClusterConfiguration in the kubeadm-config
// ConfigMap (controlPlaneEndpoint and apiServer.certSANs), the kubeconfig
// of cluster-info that kubeadm join discovers the cluster from, and
// kube-proxy's kubeconfig. YAML is edited as the parser locates it: the
// bytes of the changed values are replaced and everything else stays byte
// for byte; every result is decoded again and compared with the original,
// so an edit that would change anything else fails instead. ConfigMaps are
// read and written through the Kubernetes API with optimistic concurrency
// (configmap.go).
package clusterconfig

import (
	"bytes"
	"errors"
	"fmt"
	"reflect"
	"sort"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/kha/terraform-provider-kha/internal/kubeconfig"
	"github.com/kha/terraform-provider-kha/internal/yamledit"
)

// ClusterConfiguration is what kha reads of kubeadm's ClusterConfiguration.
type ClusterConfiguration struct {
	// ControlPlaneEndpoint is "" when absent (HasControlPlaneEndpoint false).
	ControlPlaneEndpoint    string
	HasControlPlaneEndpoint bool
	// CertSANs is apiServer.certSANs; nil when the field is absent.
	CertSANs []string
}

// The keys kha edits.
const (
	keyEndpoint  = "controlPlaneEndpoint"
	keyAPIServer = "apiServer"
	keyCertSANs  = "certSANs"
)

// ReadClusterConfiguration decodes the values kha manages.
func ReadClusterConfiguration(content string) (ClusterConfiguration, error) {
	var c struct {
		ControlPlaneEndpoint *string `yaml:"controlPlaneEndpoint"`
		APIServer            struct {
			CertSANs *[]string `yaml:"certSANs"`
		} `yaml:"apiServer"`
	}
	if err := yaml.Unmarshal([]byte(content), &c); err != nil {
		return ClusterConfiguration{}, fmt.Errorf("the ClusterConfiguration is not YAML kha can read: %v", yamledit.Sanitize(err))
	}
	var out ClusterConfiguration
	if c.ControlPlaneEndpoint != nil {
		out.ControlPlaneEndpoint, out.HasControlPlaneEndpoint = *c.ControlPlaneEndpoint, true
	}
	if c.APIServer.CertSANs != nil {
		out.CertSANs = append([]string{}, *c.APIServer.CertSANs...)
	}
	return out, nil
}

// SetControlPlaneEndpoint returns content with controlPlaneEndpoint set to
// endpoint; content itself when it has that value already.
func SetControlPlaneEndpoint(content []byte, endpoint string) ([]byte, error) {
	return editDocument(content, documentEdit{
		what: "controlPlaneEndpoint",
		want: func(root map[string]any) { root[keyEndpoint] = endpoint },
		splice: func(lines []string, root *yaml.Node) ([]string, bool) {
			if v := yamledit.MapValue(root, keyEndpoint); v != nil {
				out, ok := yamledit.ReplaceScalar([]byte(strings.Join(lines, "")), v, endpoint)
				return yamledit.Lines(out), ok
			}
			text, ok := yamledit.ScalarText(endpoint)
			if !ok {
				return nil, false
			}
			return insertKey(lines, root, keyEndpoint, []string{keyEndpoint + ": " + text})
		},
		nodes: func(root *yaml.Node) {
			setMapValue(root, keyEndpoint, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: endpoint})
		},
	})
}

// RemoveControlPlaneEndpoint returns content without controlPlaneEndpoint:
// what destroy leaves where kubeadm had left it out.
func RemoveControlPlaneEndpoint(content []byte) ([]byte, error) {
	return editDocument(content, documentEdit{
		what: "controlPlaneEndpoint",
		want: func(root map[string]any) { delete(root, keyEndpoint) },
		splice: func(lines []string, root *yaml.Node) ([]string, bool) {
			key, v := yamledit.MapEntry(root, keyEndpoint)
			if v == nil || v.Kind != yaml.ScalarNode || v.Line != key.Line || !yamledit.LeadingSpaces(lines[key.Line-1], key.Column) {
				return nil, false
			}
			return replaceLines(lines, key.Line, key.Line, nil), true
		},
		nodes: func(root *yaml.Node) {
			for i := 0; i+1 < len(root.Content); i += 2 {
				if root.Content[i].Value == keyEndpoint {
					root.Content = append(root.Content[:i], root.Content[i+2:]...)
					return
				}
			}
		},
	})
}

// SetCertSANs returns content with apiServer.certSANs set to sans, adding
// the field (and apiServer) where it is absent.
func SetCertSANs(content []byte, sans []string) ([]byte, error) {
	sans = append([]string{}, sans...)
	items := make([]any, len(sans))
	for i, s := range sans {
		items[i] = s
	}
	return editDocument(content, documentEdit{
		what: "apiServer.certSANs",
		want: func(root map[string]any) {
			api, ok := root[keyAPIServer].(map[string]any)
			if !ok {
				api = map[string]any{}
				root[keyAPIServer] = api
			}
			api[keyCertSANs] = items
		},
		splice: func(lines []string, root *yaml.Node) ([]string, bool) { return spliceCertSANs(lines, root, sans) },
		nodes: func(root *yaml.Node) {
			api := yamledit.MapValue(root, keyAPIServer)
			if api == nil || api.Kind != yaml.MappingNode {
				api = &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
				setMapValue(root, keyAPIServer, api)
			}
			api.Style = 0
			seq := &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq"}
			for _, s := range sans {
				seq.Content = append(seq.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: s})
			}
			setMapValue(api, keyCertSANs, seq)
		},
	})
}

// RemoveCertSANs returns content without apiServer.certSANs: what
// destroy leaves where kha added the field.
func RemoveCertSANs(content []byte) ([]byte, error) {
	return editDocument(content, documentEdit{
		what: "apiServer.certSANs",
		want: func(root map[string]any) {
			if api, ok := root[keyAPIServer].(map[string]any); ok {
				delete(api, keyCertSANs)
			}
		},
		splice: spliceRemoveCertSANs,
		nodes: func(root *yaml.Node) {
			api := yamledit.MapValue(root, keyAPIServer)
			if api == nil || api.Kind != yaml.MappingNode {
				return
			}
			for i := 0; i+1 < len(api.Content); i += 2 {
				if api.Content[i].Value == keyCertSANs {
					api.Content = append(api.Content[:i], api.Content[i+2:]...)
					break
				}
			}
			if len(api.Content) == 0 {
				api.Style = yaml.FlowStyle
			}
		},
	})
}

// documentEdit is one change to a YAML document, three ways: on its
// decoded value (what the result must decode to), as a splice of its
// lines (which keeps everything else byte for byte), and on its node
// tree (the fallback, re-encoded, which keeps the meaning only).
type documentEdit struct {
	what   string
	want   func(root map[string]any)
	splice func(lines []string, root *yaml.Node) ([]string, bool)
	nodes  func(root *yaml.Node)
}

func editDocument(content []byte, e documentEdit) ([]byte, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(content, &doc); err != nil {
		return nil, fmt.Errorf("the ClusterConfiguration is not YAML kha can edit: %v", yamledit.Sanitize(err))
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) != 1 || doc.Content[0].Kind != yaml.MappingNode {
		return nil, errors.New("the ClusterConfiguration is not a YAML mapping")
	}
	// want is what the result must decode to: the document as it is,
	// with the one change.
	var before, want any
	if err := yaml.Unmarshal(content, &want); err != nil {
		return nil, fmt.Errorf("the ClusterConfiguration does not decode: %v", yamledit.Sanitize(err))
	}
	_ = yaml.Unmarshal(content, &before)
	root, ok := want.(map[string]any)
	if !ok {
		return nil, errors.New("the ClusterConfiguration is not a YAML mapping with string keys")
	}
	e.want(root)
	if reflect.DeepEqual(before, want) {
		return content, nil // nothing to change
	}
	if lines, ok := e.splice(yamledit.Lines(content), doc.Content[0]); ok {
		if out := []byte(strings.Join(lines, "")); decodesTo(out, want) {
			return out, nil
		}
	}
	e.nodes(doc.Content[0])
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(&doc); err != nil {
		return nil, fmt.Errorf("encoding the ClusterConfiguration: %v", yamledit.Sanitize(err))
	}
	if !decodesTo(b.Bytes(), want) {
		return nil, fmt.Errorf("editing %s would have changed more than %s; the ClusterConfiguration was left as it was", e.what, e.what)
	}
	return b.Bytes(), nil
}

// decodesTo says whether content decodes to want.
func decodesTo(content []byte, want any) bool {
	var got any
	return yaml.Unmarshal(content, &got) == nil && reflect.DeepEqual(got, want)
}

// spliceCertSANs replaces the lines of apiServer.certSANs, or adds them.
func spliceCertSANs(lines []string, root *yaml.Node, sans []string) ([]string, bool) {
	texts := make([]string, len(sans))
	for i, s := range sans {
		t, ok := yamledit.ScalarText(s)
		if !ok {
			return nil, false
		}
		texts[i] = t
	}
	block := func(indent string) []string {
		if len(texts) == 0 {
			return []string{keyCertSANs + ": []"}
		}
		out := []string{keyCertSANs + ":"}
		for _, t := range texts {
			out = append(out, indent+"- "+t)
		}
		return out
	}
	apiKey, api := yamledit.MapEntry(root, keyAPIServer)
	switch {
	case api == nil:
		// No apiServer: add it, with certSANs, kubeadm's way.
		return insertKey(lines, root, keyAPIServer, append([]string{keyAPIServer + ":"}, indentAll(block(""), "  ")...))
	case api.Kind == yaml.MappingNode && api.Style&yaml.FlowStyle != 0 && len(api.Content) == 0 && api.Line == apiKey.Line:
		// apiServer: {} becomes a block with certSANs.
		line := lines[apiKey.Line-1]
		start := yamledit.ColumnOffset(line, api.Column)
		if start < 0 || !strings.HasPrefix(line[start:], "{}") || !yamledit.LeadingSpaces(line, apiKey.Column) {
			return nil, false
		}
		rest := strings.TrimRight(line[start+2:], "\r\n")
		indent := strings.Repeat(" ", apiKey.Column-1+2)
		head := strings.TrimRight(line[:start], " ") + rest + "\n"
		return replaceLines(lines, apiKey.Line, apiKey.Line, append([]string{head}, withNewlines(indentAll(block(""), indent))...)), true
	case api.Kind != yaml.MappingNode || api.Style&yaml.FlowStyle != 0:
		return nil, false
	}
	key, seq := yamledit.MapEntry(api, keyCertSANs)
	if seq == nil {
		return insertKey(lines, api, keyCertSANs, block(""))
	}
	switch {
	case seq.Kind == yaml.SequenceNode && seq.Style&yaml.FlowStyle == 0 && len(seq.Content) > 0 && seq.Line > key.Line:
		// A block sequence: its items' lines are replaced.
		first, last, ok := itemLines(seq)
		if !ok || first != seq.Line {
			return nil, false
		}
		indent := strings.Repeat(" ", seq.Column-1)
		if len(texts) == 0 {
			if !yamledit.LeadingSpaces(lines[key.Line-1], key.Column) {
				return nil, false
			}
			return replaceLines(lines, key.Line, last, []string{strings.Repeat(" ", key.Column-1) + keyCertSANs + ": []\n"}), true
		}
		return replaceLines(lines, first, last, withNewlines(block(indent)[1:])), true
	case seq.Kind == yaml.SequenceNode && seq.Style&yaml.FlowStyle != 0 && seq.Line == key.Line:
		// A flow sequence on the key's line: replaced by one in flow.
		line := lines[seq.Line-1]
		start := yamledit.ColumnOffset(line, seq.Column)
		end, ok := flowEnd(line, start)
		if !ok {
			return nil, false
		}
		out := append([]string{}, lines...)
		out[seq.Line-1] = line[:start] + "[" + strings.Join(texts, ", ") + "]" + line[end:]
		return out, true
	}
	return nil, false
}

// spliceRemoveCertSANs removes the lines of apiServer.certSANs.
func spliceRemoveCertSANs(lines []string, root *yaml.Node) ([]string, bool) {
	apiKey, api := yamledit.MapEntry(root, keyAPIServer)
	if api == nil || api.Kind != yaml.MappingNode || api.Style&yaml.FlowStyle != 0 {
		return nil, false
	}
	key, seq := yamledit.MapEntry(api, keyCertSANs)
	if seq == nil || !yamledit.LeadingSpaces(lines[key.Line-1], key.Column) {
		return nil, false
	}
	last := key.Line
	switch {
	case seq.Kind == yaml.SequenceNode && seq.Style&yaml.FlowStyle == 0 && len(seq.Content) > 0:
		_, l, ok := itemLines(seq)
		if !ok {
			return nil, false
		}
		last = l
	case seq.Line == key.Line:
		if end, ok := flowEnd(lines[key.Line-1], yamledit.ColumnOffset(lines[key.Line-1], seq.Column)); seq.Kind != yaml.SequenceNode ||
			!ok || strings.TrimSpace(lines[key.Line-1][end:]) != "" {
			return nil, false
		}
	default:
		return nil, false
	}
	if len(api.Content) == 2 {
		// certSANs was apiServer's only key: apiServer: {} again, as
		// kubeadm writes an empty one.
		head := lines[apiKey.Line-1]
		if apiKey.Line != key.Line-1 || strings.TrimRight(head, "\r\n") != strings.Repeat(" ", apiKey.Column-1)+keyAPIServer+":" {
			return nil, false
		}
		return replaceLines(lines, apiKey.Line, last, []string{strings.Repeat(" ", apiKey.Column-1) + keyAPIServer + ": {}\n"}), true
	}
	return replaceLines(lines, key.Line, last, nil), true
}

// itemLines are the first and last lines of a block sequence whose items
// are single-line scalars, one a line.
func itemLines(seq *yaml.Node) (first, last int, ok bool) {
	for i, item := range seq.Content {
		if item.Kind != yaml.ScalarNode || (item.Style != 0 && item.Style != yaml.DoubleQuotedStyle && item.Style != yaml.SingleQuotedStyle) {
			return 0, 0, false
		}
		if i > 0 && item.Line <= last {
			return 0, 0, false
		}
		if i == 0 {
			first = item.Line
		}
		last = item.Line
	}
	return first, last, len(seq.Content) > 0
}

// insertKey adds a key (text, its lines without indentation) to the
// block mapping m, in the place sorted order gives it among m's keys (as
// kubeadm writes them): before the first key after it, else after the
// document's last line when m is the document's mapping.
func insertKey(lines []string, m *yaml.Node, key string, text []string) ([]string, bool) {
	if m.Kind != yaml.MappingNode || m.Style&yaml.FlowStyle != 0 || len(m.Content) == 0 {
		return nil, false
	}
	indent := strings.Repeat(" ", m.Content[0].Column-1)
	for i := 0; i+1 < len(m.Content); i += 2 {
		k := m.Content[i]
		if k.Column != m.Content[0].Column || !yamledit.LeadingSpaces(lines[k.Line-1], k.Column) {
			return nil, false
		}
		if k.Value > key {
			return replaceLines(lines, k.Line, k.Line-1, withNewlines(indentAll(text, indent))), true
		}
	}
	if m.Content[0].Column != 1 {
		return nil, false // the end of a nested mapping is not known
	}
	out := append([]string{}, lines...)
	if n := len(out); n > 0 && !strings.HasSuffix(out[n-1], "\n") {
		out[n-1] += "\n"
	}
	return append(out, withNewlines(indentAll(text, indent))...), true
}

// replaceLines replaces lines from..to (1-based, inclusive; to = from-1
// inserts before from) with with.
func replaceLines(lines []string, from, to int, with []string) []string {
	out := append([]string{}, lines[:from-1]...)
	out = append(out, with...)
	return append(out, lines[to:]...)
}

func indentAll(text []string, indent string) []string {
	out := make([]string, len(text))
	for i, t := range text {
		out[i] = indent + t
	}
	return out
}

func withNewlines(text []string) []string {
	out := make([]string, len(text))
	for i, t := range text {
		out[i] = t + "\n"
	}
	return out
}

// flowEnd is the offset just past the flow sequence that starts at start
// and ends on the same line.
func flowEnd(line string, start int) (int, bool) {
	if start < 0 || start >= len(line) || line[start] != '[' {
		return 0, false
	}
	depth := 0
	for i := start; i < len(line); i++ {
		switch c := line[i]; c {
		case '[', '{':
			depth++
		case ']', '}':
			if depth--; depth == 0 {
				return i + 1, true
			}
		case '"':
			for i++; i < len(line) && line[i] != '"'; i++ {
				if line[i] == '\\' {
					i++
				}
			}
		case '\'':
			for i++; i < len(line) && line[i] != '\''; i++ {
			}
		case '\n':
			return 0, false
		}
	}
	return 0, false
}

// setMapValue sets key in m, adding it in sorted place when absent.
func setMapValue(m *yaml.Node, key string, v *yaml.Node) {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			m.Content[i+1] = v
			return
		}
	}
	at := len(m.Content)
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value > key {
			at = i
			break
		}
	}
	k := &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: key}
	m.Content = append(m.Content[:at], append([]*yaml.Node{k, v}, m.Content[at:]...)...)
}

// KubeconfigServer is the server of a kubeconfig's clusters (cluster-info
// and kube-proxy's have one); an error when they have different servers.
func KubeconfigServer(content string) (string, error) {
	servers, err := kubeconfig.Servers([]byte(content), "")
	if err != nil {
		return "", err
	}
	server, names := "", make([]string, 0, len(servers))
	for name := range servers {
		names = append(names, name)
	}
	sort.Strings(names)
	for i, name := range names {
		if i > 0 && servers[name] != server {
			return "", fmt.Errorf("the kubeconfig's clusters have different servers (%s and %s)", server, servers[name])
		}
		server = servers[name]
	}
	return server, nil
}

// SetKubeconfigServer points every cluster of a kubeconfig at server;
// only the server values' bytes change (kubeconfig.SetServers).
func SetKubeconfigServer(content, server string) (string, error) {
	servers, err := kubeconfig.Servers([]byte(content), "")
	if err != nil {
		return "", err
	}
	want := make(map[string]string, len(servers))
	for name := range servers {
		want[name] = server
	}
	out, err := kubeconfig.SetServers([]byte(content), want)
	return string(out), err
}

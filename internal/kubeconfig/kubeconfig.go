// Package kubeconfig reads and edits the one thing kha manages in a
// kubeconfig: the server of its clusters. Edits change the server
// values' bytes and nothing else, so client credentials that rotate,
// contexts, extensions, comments and formatting stay as they are; the
// result is checked by decoding it again.
package kubeconfig

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"reflect"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Config is the part of a kubeconfig kha reads.
type Config struct {
	CurrentContext string         `yaml:"current-context"`
	Clusters       []NamedCluster `yaml:"clusters"`
	Contexts       []NamedContext `yaml:"contexts"`
	Users          []NamedUser    `yaml:"users"`
}

// NamedCluster is one entry of clusters.
type NamedCluster struct {
	Name    string  `yaml:"name"`
	Cluster Cluster `yaml:"cluster"`
}

// Cluster is where a cluster's apiserver is and how to verify it.
type Cluster struct {
	Server                   string `yaml:"server"`
	TLSServerName            string `yaml:"tls-server-name"`
	InsecureSkipTLSVerify    bool   `yaml:"insecure-skip-tls-verify"`
	CertificateAuthority     string `yaml:"certificate-authority"`
	CertificateAuthorityData Base64 `yaml:"certificate-authority-data"`
}

// Base64 is a kubeconfig's *-data field: PEM, base64-encoded.
type Base64 string

// Decode returns the field's bytes.
func (b Base64) Decode() ([]byte, error) {
	out, err := base64.StdEncoding.DecodeString(strings.TrimSpace(string(b)))
	if err != nil {
		return nil, errors.New("a *-data field is not base64")
	}
	return out, nil
}

// NamedContext is one entry of contexts.
type NamedContext struct {
	Name    string `yaml:"name"`
	Context struct {
		Cluster string `yaml:"cluster"`
		User    string `yaml:"user"`
	} `yaml:"context"`
}

// NamedUser is one entry of users.
type NamedUser struct {
	Name string `yaml:"name"`
	User User   `yaml:"user"`
}

// User is a user's credentials, as far as kha can present them.
type User struct {
	ClientCertificate     string    `yaml:"client-certificate"`
	ClientCertificateData Base64    `yaml:"client-certificate-data"`
	ClientKey             string    `yaml:"client-key"`
	ClientKeyData         Base64    `yaml:"client-key-data"`
	Token                 string    `yaml:"token"`
	TokenFile             string    `yaml:"tokenFile"`
	Exec                  yaml.Node `yaml:"exec"`
	AuthProvider          yaml.Node `yaml:"auth-provider"`
}

// UsesPlugin says whether the user's credentials come from a program
// (exec or auth-provider), which kha does not run.
func (u User) UsesPlugin() bool {
	return !u.Exec.IsZero() || !u.AuthProvider.IsZero()
}

// Parse decodes a kubeconfig.
func Parse(content []byte) (*Config, error) {
	var c Config
	if err := yaml.Unmarshal(content, &c); err != nil {
		return nil, fmt.Errorf("not a kubeconfig: %v", sanitize(err))
	}
	if len(c.Clusters) == 0 {
		return nil, errors.New("not a kubeconfig: it has no clusters")
	}
	return &c, nil
}

// sanitize keeps YAML errors to their position: their text may quote
// the content, which holds keys.
func sanitize(err error) error {
	msg := err.Error()
	if i := strings.Index(msg, ": "); strings.HasPrefix(msg, "yaml: line ") && i > 0 {
		return errors.New(msg[:i])
	}
	return errors.New("the YAML does not decode")
}

// Selected are the clusters an edit applies to: the one named cluster,
// or every cluster when cluster is "".
func (c *Config) Selected(cluster string) ([]NamedCluster, error) {
	if cluster == "" {
		return c.Clusters, nil
	}
	for _, nc := range c.Clusters {
		if nc.Name == cluster {
			return []NamedCluster{nc}, nil
		}
	}
	var names []string
	for _, nc := range c.Clusters {
		names = append(names, nc.Name)
	}
	return nil, fmt.Errorf("the kubeconfig has no cluster %q (it has %s)", cluster, strings.Join(names, ", "))
}

// Servers are the servers of the selected clusters, by cluster name.
func Servers(content []byte, cluster string) (map[string]string, error) {
	c, err := Parse(content)
	if err != nil {
		return nil, err
	}
	selected, err := c.Selected(cluster)
	if err != nil {
		return nil, err
	}
	servers := map[string]string{}
	for _, nc := range selected {
		servers[nc.Name] = nc.Cluster.Server
	}
	return servers, nil
}

// UserFor is the user of the context that uses cluster, preferring the
// current context; ok is false when no context uses the cluster.
func (c *Config) UserFor(cluster string) (user User, ok bool) {
	var name string
	for _, ctx := range c.Contexts {
		if ctx.Context.Cluster == cluster && (name == "" || ctx.Name == c.CurrentContext) {
			name = ctx.Context.User
		}
	}
	for _, u := range c.Users {
		if u.Name == name {
			return u.User, true
		}
	}
	return User{}, false
}

// SetServers returns content with the server of each cluster in servers
// (by name) set to its value. Only those values' bytes change where the
// value is a single-line scalar; otherwise the document is encoded anew,
// which keeps its meaning but not its formatting.
func SetServers(content []byte, servers map[string]string) ([]byte, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(content, &doc); err != nil {
		return nil, fmt.Errorf("not a kubeconfig: %v", sanitize(err))
	}
	nodes, err := serverNodes(&doc)
	if err != nil {
		return nil, err
	}
	var edits []edit
	for name, server := range servers {
		n, ok := nodes[name]
		if !ok {
			return nil, fmt.Errorf("the kubeconfig has no cluster %q with a server", name)
		}
		if n.Value != server {
			edits = append(edits, edit{node: n, value: server})
		}
	}
	if len(edits) == 0 {
		return content, nil
	}
	if out, ok := splice(content, edits); ok && sameExceptServers(content, out, servers) {
		return out, nil
	}
	for _, e := range edits {
		e.node.Value, e.node.Style, e.node.Tag = e.value, 0, "!!str"
	}
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(&doc); err != nil {
		return nil, err
	}
	if !sameExceptServers(content, b.Bytes(), servers) {
		return nil, errors.New("editing the server changed more than the server; the kubeconfig was left as it was")
	}
	return b.Bytes(), nil
}

type edit struct {
	node  *yaml.Node
	value string
}

// serverNodes finds clusters[*].cluster.server by cluster name.
func serverNodes(doc *yaml.Node) (map[string]*yaml.Node, error) {
	if doc.Kind != yaml.DocumentNode || len(doc.Content) != 1 || doc.Content[0].Kind != yaml.MappingNode {
		return nil, errors.New("not a kubeconfig: the document is not a mapping")
	}
	clusters := mapValue(doc.Content[0], "clusters")
	if clusters == nil || clusters.Kind != yaml.SequenceNode {
		return nil, errors.New("not a kubeconfig: it has no clusters")
	}
	nodes := map[string]*yaml.Node{}
	for _, entry := range clusters.Content {
		name, cluster := mapValue(entry, "name"), mapValue(entry, "cluster")
		if name == nil || cluster == nil {
			continue
		}
		if server := mapValue(cluster, "server"); server != nil && server.Kind == yaml.ScalarNode {
			nodes[name.Value] = server
		}
	}
	return nodes, nil
}

func mapValue(m *yaml.Node, key string) *yaml.Node {
	if m == nil || m.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i+1]
		}
	}
	return nil
}

// splice replaces each edited scalar's text in place. It handles plain
// and quoted scalars on one line; anything else reports !ok.
func splice(content []byte, edits []edit) ([]byte, bool) {
	lines := bytes.SplitAfter(content, []byte("\n"))
	for _, e := range edits {
		n := e.node
		if n.Line < 1 || n.Line > len(lines) || n.Column < 1 {
			return nil, false
		}
		line := string(lines[n.Line-1])
		start := columnOffset(line, n.Column)
		if start < 0 {
			return nil, false
		}
		end, ok := scalarEnd(line, start, n.Style)
		if !ok {
			return nil, false
		}
		replacement, err := yaml.Marshal(&yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: e.value, Style: chosenQuotes(n)})
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

// columnOffset turns yaml's 1-based column (in characters) into a byte
// offset.
func columnOffset(line string, column int) int {
	col := 1
	for i := range line {
		if col == column {
			return i
		}
		col++
	}
	return -1
}

// scalarEnd is the byte offset just past the scalar starting at start.
func scalarEnd(line string, start int, style yaml.Style) (int, bool) {
	rest := line[start:]
	switch style {
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
		end := len(strings.TrimRight(rest, "\r\n"))
		if i := strings.Index(rest[:end], " #"); i >= 0 {
			end = i
		}
		return start + len(strings.TrimRight(rest[:end], " \t")), true
	}
	return 0, false
}

// sameExceptServers says whether after decodes to before with the given
// servers set, and nothing else changed.
func sameExceptServers(before, after []byte, servers map[string]string) bool {
	var a, b any
	if yaml.Unmarshal(before, &a) != nil || yaml.Unmarshal(after, &b) != nil {
		return false
	}
	root, ok := a.(map[string]any)
	if !ok {
		return false
	}
	clusters, _ := root["clusters"].([]any)
	for _, entry := range clusters {
		m, _ := entry.(map[string]any)
		name, _ := m["name"].(string)
		if server, ok := servers[name]; ok {
			if cluster, ok := m["cluster"].(map[string]any); ok {
				cluster["server"] = server
			}
		}
	}
	return reflect.DeepEqual(a, b)
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
	return splice(content, []edit{{node: n, value: value}})
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

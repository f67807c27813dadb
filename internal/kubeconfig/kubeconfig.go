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

	"github.com/kha/terraform-provider-kha/internal/yamledit"
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
		return nil, fmt.Errorf("not a kubeconfig: %v", yamledit.Sanitize(err))
	}
	if len(c.Clusters) == 0 {
		return nil, errors.New("not a kubeconfig: it has no clusters")
	}
	return &c, nil
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
		return nil, fmt.Errorf("not a kubeconfig: %v", yamledit.Sanitize(err))
	}
	nodes, err := serverNodes(&doc)
	if err != nil {
		return nil, err
	}
	var edits []yamledit.Edit
	for name, server := range servers {
		n, ok := nodes[name]
		if !ok {
			return nil, fmt.Errorf("the kubeconfig has no cluster %q with a server", name)
		}
		if n.Value != server {
			edits = append(edits, yamledit.Edit{Node: n, Value: server})
		}
	}
	if len(edits) == 0 {
		return content, nil
	}
	if out, ok := yamledit.Replace(content, edits...); ok && sameExceptServers(content, out, servers) {
		return out, nil
	}
	for _, e := range edits {
		e.Node.Value, e.Node.Style, e.Node.Tag = e.Value, 0, "!!str"
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

func serverNodes(doc *yaml.Node) (map[string]*yaml.Node, error) {
	if doc.Kind != yaml.DocumentNode || len(doc.Content) != 1 || doc.Content[0].Kind != yaml.MappingNode {
		return nil, errors.New("not a kubeconfig: the document is not a mapping")
	}
	clusters := yamledit.MapValue(doc.Content[0], "clusters")
	if clusters == nil || clusters.Kind != yaml.SequenceNode {
		return nil, errors.New("not a kubeconfig: it has no clusters")
	}
	nodes := map[string]*yaml.Node{}
	for _, entry := range clusters.Content {
		name, cluster := yamledit.MapValue(entry, "name"), yamledit.MapValue(entry, "cluster")
		if name == nil || cluster == nil {
			continue
		}
		if server := yamledit.MapValue(cluster, "server"); server != nil && server.Kind == yaml.ScalarNode && server.ShortTag() == "!!str" {
			nodes[name.Value] = server
		}
	}
	return nodes, nil
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

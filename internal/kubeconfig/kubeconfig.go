// Package kubeconfig reads and edits what kha manages in a kubeconfig:
// how its clusters reach their apiserver, the server and the
// tls-server-name. Edits change those entries' bytes and nothing else (a
// value in place, a tls-server-name line added or removed), so client
// credentials that rotate, contexts, extensions, comments and formatting
// stay as they are; the result is checked by decoding it again.
package kubeconfig

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"maps"
	"reflect"
	"slices"
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

// Endpoint is how a kubeconfig's cluster reaches its apiserver.
type Endpoint struct {
	Server string
	// TLSServerName is the cluster's tls-server-name: the name the client
	// sends in SNI and verifies the certificate for; "" for none (the
	// server's host).
	TLSServerName string
}

// Endpoints are the endpoints of the selected clusters (Selected), by cluster name.
func Endpoints(content []byte, cluster string) (map[string]Endpoint, error) {
	c, err := Parse(content)
	if err != nil {
		return nil, err
	}
	selected, err := c.Selected(cluster)
	if err != nil {
		return nil, err
	}
	endpoints := map[string]Endpoint{}
	for _, nc := range selected {
		endpoints[nc.Name] = Endpoint{Server: nc.Cluster.Server, TLSServerName: nc.Cluster.TLSServerName}
	}
	return endpoints, nil
}

// Servers are the servers of the selected clusters, by cluster name.
func Servers(content []byte, cluster string) (map[string]string, error) {
	endpoints, err := Endpoints(content, cluster)
	if err != nil {
		return nil, err
	}
	servers := make(map[string]string, len(endpoints))
	for name, e := range endpoints {
		servers[name] = e.Server
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
// (by name) set to its value, its tls-server-name kept (SetEndpoints).
func SetServers(content []byte, servers map[string]string) ([]byte, error) {
	_, clusters, err := clusterEntries(content)
	if err != nil {
		return nil, err
	}
	want := make(map[string]Endpoint, len(servers))
	for name, server := range servers {
		e := Endpoint{Server: server}
		if c, ok := clusters[name]; ok {
			current, err := c.endpoint()
			if err != nil {
				return nil, err
			}
			e.TLSServerName = current.TLSServerName
		}
		want[name] = e
	}
	return SetEndpoints(content, want)
}

// SetEndpoints returns content with each cluster in want (by name) set to
// its endpoint; an empty TLSServerName removes tls-server-name.
//
// Only the bytes of what changes change: a value is replaced in place,
// and a tls-server-name of a block mapping is a line of its own, added
// after the server's line or removed. Where the layout does not allow
// that (a flow mapping, a value over several lines), the document is
// encoded anew, which keeps its meaning but not its formatting. Either
// way the result must decode to content with those changes and no other,
// or content is left as it was and an error says so.
func SetEndpoints(content []byte, want map[string]Endpoint) ([]byte, error) {
	doc, clusters, err := clusterEntries(content)
	if err != nil {
		return nil, err
	}
	var changes []change
	for _, name := range slices.Sorted(maps.Keys(want)) {
		c, ok := clusters[name]
		if !ok {
			return nil, fmt.Errorf("the kubeconfig has no cluster %q with a server", name)
		}
		current, err := c.endpoint()
		if err != nil {
			return nil, err
		}
		e := want[name]
		if ch := (change{clusterEntry: c, want: e, server: current.Server != e.Server, tls: current.TLSServerName != e.TLSServerName}); ch.server || ch.tls {
			changes = append(changes, ch)
		}
	}
	if len(changes) == 0 {
		return content, nil
	}
	if out, ok := splice(content, changes); ok && sameExceptEndpoints(content, out, changes) {
		return out, nil
	}
	for _, ch := range changes {
		ch.setNodes()
	}
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(doc); err != nil {
		return nil, fmt.Errorf("encoding the kubeconfig: %v", yamledit.Sanitize(err))
	}
	if !sameExceptEndpoints(content, b.Bytes(), changes) {
		return nil, errors.New("editing the endpoints would have changed more than them; the kubeconfig was left as it was")
	}
	return b.Bytes(), nil
}

const (
	keyServer        = "server"
	keyTLSServerName = "tls-server-name"
)

// clusterEntry is a cluster's mapping and its server and tls-server-name
// values, as the parser located them in the file.
type clusterEntry struct {
	name    string
	mapping *yaml.Node
	server  *yaml.Node
	tls     *yaml.Node // nil when absent
}

// endpoint is the cluster's endpoint as Parse decodes it (a null
// tls-server-name is "", one from a merge key counts), which an edit
// compares with the wanted one.
func (c clusterEntry) endpoint() (Endpoint, error) {
	var decoded struct {
		Server        string `yaml:"server"`
		TLSServerName string `yaml:"tls-server-name"`
	}
	if err := c.mapping.Decode(&decoded); err != nil {
		return Endpoint{}, fmt.Errorf("the tls-server-name of cluster %q is not a string", c.name)
	}
	return Endpoint{Server: decoded.Server, TLSServerName: decoded.TLSServerName}, nil
}

// clusterEntries decodes content into its node tree and finds its
// clusters that have a string server, by name. A name given twice is its
// last cluster's, as Parse reads it.
func clusterEntries(content []byte) (*yaml.Node, map[string]clusterEntry, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(content, &doc); err != nil {
		return nil, nil, fmt.Errorf("not a kubeconfig: %v", yamledit.Sanitize(err))
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) != 1 || doc.Content[0].Kind != yaml.MappingNode {
		return nil, nil, errors.New("not a kubeconfig: the document is not a mapping")
	}
	clusters := yamledit.MapValue(doc.Content[0], "clusters")
	if clusters == nil || clusters.Kind != yaml.SequenceNode {
		return nil, nil, errors.New("not a kubeconfig: it has no clusters")
	}
	entries := map[string]clusterEntry{}
	for _, item := range clusters.Content {
		// An item without a name is named "", as Parse reads it; one
		// that repeats another (an alias) is not edited, as that would
		// edit the other too.
		entry := item
		if entry.Kind == yaml.AliasNode {
			entry = entry.Alias
		}
		var name string
		if n := yamledit.MapValue(entry, "name"); n != nil && n.Decode(&name) != nil {
			continue
		}
		delete(entries, name)
		cluster := yamledit.MapValue(entry, "cluster")
		if server := yamledit.MapValue(cluster, keyServer); server != nil && server.Kind == yaml.ScalarNode && server.ShortTag() == "!!str" && item.Kind != yaml.AliasNode {
			entries[name] = clusterEntry{name: name, mapping: cluster, server: server, tls: yamledit.MapValue(cluster, keyTLSServerName)}
		}
	}
	return &doc, entries, nil
}

// change is what an edit does to one cluster: its endpoint becomes want,
// and server and tls say which of its values that changes.
type change struct {
	clusterEntry
	want        Endpoint
	server, tls bool
}

// splice makes the changes in content's bytes: values in place first
// (no line moves), then tls-server-name lines added and removed from the
// bottom of the file up, so that each line still has the number the
// parser gave it. The lines are checked before anything changes, as the
// parser found them. ok is false when a change does not fit the layout.
func splice(content []byte, changes []change) ([]byte, bool) {
	var edits []yamledit.Edit
	type lineEdit struct {
		line int
		text string // "" deletes the line
	}
	var lineEdits []lineEdit
	for _, ch := range changes {
		if ch.server {
			edits = append(edits, yamledit.Edit{Node: ch.clusterEntry.server, Value: ch.want.Server})
		}
		switch {
		case !ch.tls:
		case ch.want.TLSServerName != "" && ch.clusterEntry.tls != nil:
			edits = append(edits, yamledit.Edit{Node: ch.clusterEntry.tls, Value: ch.want.TLSServerName})
		case ch.want.TLSServerName != "":
			// A line of its own after the server's, in the server's
			// column.
			line, column, ok := yamledit.EntryLine(content, ch.mapping, keyServer)
			value, valueOK := yamledit.ScalarText(ch.want.TLSServerName)
			if !ok || !valueOK {
				return nil, false
			}
			lineEdits = append(lineEdits, lineEdit{line, strings.Repeat(" ", column-1) + keyTLSServerName + ": " + value})
		default:
			line, _, ok := yamledit.EntryLine(content, ch.mapping, keyTLSServerName)
			if !ok {
				return nil, false
			}
			lineEdits = append(lineEdits, lineEdit{line: line})
		}
	}
	out := content
	var ok bool
	if len(edits) > 0 {
		if out, ok = yamledit.Replace(content, edits...); !ok {
			return nil, false
		}
	}
	slices.SortFunc(lineEdits, func(a, b lineEdit) int { return b.line - a.line })
	for _, e := range lineEdits {
		if e.text == "" {
			out, ok = yamledit.DeleteLine(out, e.line)
		} else {
			out, ok = yamledit.InsertLine(out, e.line, e.text)
		}
		if !ok {
			return nil, false
		}
	}
	return out, true
}

// setNodes makes the change in the node tree, for encoding: a
// tls-server-name added goes right after the server, as splice adds it.
func (ch change) setNodes() {
	if ch.server {
		n := ch.clusterEntry.server
		n.Value, n.Style, n.Tag = ch.want.Server, 0, "!!str"
	}
	if !ch.tls {
		return
	}
	m := ch.mapping
	at := -1
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == keyTLSServerName {
			at = i
		}
	}
	value := &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: ch.want.TLSServerName}
	switch {
	case ch.want.TLSServerName == "":
		if at >= 0 {
			m.Content = slices.Delete(m.Content, at, at+2)
		}
	case at >= 0:
		m.Content[at+1] = value
	default:
		for i := 0; i+1 < len(m.Content); i += 2 {
			if m.Content[i+1] == ch.clusterEntry.server {
				key := &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: keyTLSServerName}
				m.Content = slices.Insert(m.Content, i+2, key, value)
				return
			}
		}
	}
}

// sameExceptEndpoints says whether after decodes to before with the
// changes made (a server set; a tls-server-name set, or gone when the
// wanted one is ""), and nothing else changed, in any of its documents.
func sameExceptEndpoints(before, after []byte, changes []change) bool {
	a, okA := decodeAll(before)
	b, okB := decodeAll(after)
	if !okA || !okB || len(a) == 0 {
		return false
	}
	root, ok := a[0].(map[string]any)
	if !ok {
		return false
	}
	byName := map[string]change{}
	for _, ch := range changes {
		byName[ch.name] = ch
	}
	clusters, _ := root["clusters"].([]any)
	for _, entry := range clusters {
		m, _ := entry.(map[string]any)
		name, _ := m["name"].(string)
		ch, ok := byName[name]
		cluster, isMap := m["cluster"].(map[string]any)
		if !ok || !isMap {
			continue
		}
		if ch.server {
			cluster[keyServer] = ch.want.Server
		}
		switch {
		case !ch.tls:
		case ch.want.TLSServerName == "":
			delete(cluster, keyTLSServerName)
		default:
			cluster[keyTLSServerName] = ch.want.TLSServerName
		}
	}
	return reflect.DeepEqual(a, b)
}

// decodeAll decodes each of content's documents; ok is false when one
// does not decode.
func decodeAll(content []byte) (docs []any, ok bool) {
	dec := yaml.NewDecoder(bytes.NewReader(content))
	for {
		var v any
		switch err := dec.Decode(&v); {
		case errors.Is(err, io.EOF):
			return docs, true
		case err != nil:
			return nil, false
		}
		docs = append(docs, v)
	}
}

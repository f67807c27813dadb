package provider

import (
	"context"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/providerserver"
	fwresource "github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-go/tfprotov6"
)

// TestKubesprayComparisons: the documentation's statements about kubespray
// quote kubespray's own values (its nginx.conf.j2 has proxy_connect_timeout
// 1s and proxy_timeout 10m; its haproxy.cfg.j2 30s, 5m and 15m), and every
// deviation from kubespray is stated where the attribute is documented.
func TestKubesprayComparisons(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		resource  func() fwresource.Resource
		attribute string // "" for the resource's own description
		want      []string
		not       []string
	}{
		{NewNginxConfigResource, "proxy_timeouts.connect", []string{"as kubespray's nginx", "HAProxy (`timeout connect 30s`)"}, []string{"Unlike kubespray's 30s"}},
		{NewNginxConfigResource, "proxy_timeouts.client", []string{"nginx `proxy_timeout 10m`", "HAProxy 5m"}, nil},
		{NewNginxConfigResource, "proxy_timeouts.server", []string{"nginx `proxy_timeout 10m`", "HAProxy 15m"}, []string{"(kubespray: 15m)"}},
		{NewHAProxyConfigResource, "proxy_timeouts.connect", []string{"HAProxy (`timeout connect 30s`)"}, nil},
		{NewNginxConfigResource, "", []string{"`proxy_next_upstream_tries` is the number of backends", "(backends + 1) × `proxy_timeouts.connect`", "unlimited retries"}, nil},
		{NewClusterEndpointsResource, "kube_proxy_server", []string{"`https://[::1]:<local_lb.port>`", "kubespray leaves kubeadm's value (the first control-plane node)"}, nil},
		{NewClusterEndpointsResource, "kubeadm_discovery_address", []string{"bracketed", "kubespray writes it bare"}, nil},
	} {
		var resp fwresource.SchemaResponse
		r := tc.resource()
		r.Schema(context.Background(), fwresource.SchemaRequest{}, &resp)
		var meta fwresource.MetadataResponse
		r.Metadata(context.Background(), fwresource.MetadataRequest{ProviderTypeName: "kha"}, &meta)
		text := resp.Schema.MarkdownDescription
		if tc.attribute != "" {
			a, ok := nestedAttribute(resp.Schema.Attributes, tc.attribute)
			if !ok {
				t.Fatalf("%s has no attribute %s", meta.TypeName, tc.attribute)
			}
			text = a.GetMarkdownDescription()
		}
		for _, w := range tc.want {
			if !strings.Contains(text, w) {
				t.Errorf("%s %s: description lacks %q:\n%s", meta.TypeName, tc.attribute, w, text)
			}
		}
		for _, n := range tc.not {
			if strings.Contains(text, n) {
				t.Errorf("%s %s: description still says %q", meta.TypeName, tc.attribute, n)
			}
		}
	}
}

// kubesprayName is a kubespray variable or group as the descriptions name
// it: "kubespray's `loadbalancer_apiserver_port`".
var kubesprayName = regexp.MustCompile("kubespray's (?:per-host )?`([a-z_][a-z0-9_.]*)`")

// TestKubesprayGuideCoversTheSchema: every kubespray variable a resource's
// documentation names is in the kubespray guide's table, so the table
// translates a whole kubespray cluster.
func TestKubesprayGuideCoversTheSchema(t *testing.T) {
	t.Parallel()
	guide, err := os.ReadFile("../../templates/guides/kubespray.md.tmpl")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	schemas, err := providerserver.NewProtocol6(New("test", "test")())().GetProviderSchema(ctx, &tfprotov6.GetProviderSchemaRequest{})
	if err != nil {
		t.Fatal(err)
	}
	named := map[string][]string{} // kubespray name -> where
	var walk func(where string, attrs []*tfprotov6.SchemaAttribute)
	walk = func(where string, attrs []*tfprotov6.SchemaAttribute) {
		for _, a := range attrs {
			for _, m := range kubesprayName.FindAllStringSubmatch(a.Description, -1) {
				named[m[1]] = append(named[m[1]], where+"."+a.Name)
			}
			if a.NestedType != nil {
				walk(where+"."+a.Name, a.NestedType.Attributes)
			}
		}
	}
	for name, s := range schemas.ResourceSchemas {
		for _, m := range kubesprayName.FindAllStringSubmatch(s.Block.Description, -1) {
			named[m[1]] = append(named[m[1]], name)
		}
		walk(name, s.Block.Attributes)
	}
	if len(named) < 20 {
		t.Fatalf("only %d kubespray names found in the schema: %v", len(named), named)
	}
	for name, where := range named {
		if !strings.Contains(string(guide), "`"+name+"`") {
			t.Errorf("kubespray's `%s` (named by %s) is not in templates/guides/kubespray.md.tmpl", name, where)
		}
	}
}

// nestedAttribute is the attribute at a dotted path ("proxy_timeouts.connect")
// through single nested attributes.
func nestedAttribute(attrs map[string]schema.Attribute, dotted string) (schema.Attribute, bool) {
	name, rest, nested := strings.Cut(dotted, ".")
	a, ok := attrs[name]
	if !ok || !nested {
		return a, ok
	}
	object, ok := a.(schema.SingleNestedAttribute)
	if !ok {
		return nil, false
	}
	return nestedAttribute(object.Attributes, rest)
}

package provider

import (
	"time"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/kha/terraform-provider-kha/internal/endpoints"
)

// Object types of computed attributes that several resources and
// functions share.
var (
	sansType    = map[string]attr.Type{"dns_names": types.ListType{ElemType: types.StringType}, "ip_addresses": types.ListType{ElemType: types.StringType}}
	listenType  = map[string]attr.Type{"address": types.StringType, "ipv6_address": types.StringType, "port": types.Int64Type}
	backendType = map[string]attr.Type{"name": types.StringType, "address": types.StringType, "port": types.Int64Type,
		"anonymous_auth": types.BoolType, "shutdown_delay_duration": types.StringType, "min_request_timeout": types.Int64Type}
	healthCheckSpecType = map[string]attr.Type{"protocol": types.StringType, "path": types.StringType, "port": types.Int64Type,
		"interval_seconds": types.Int64Type, "timeout_seconds": types.Int64Type, "healthy_threshold": types.Int64Type,
		"unhealthy_threshold": types.Int64Type}
	fallbackType = map[string]attr.Type{"address": types.StringType, "port": types.Int64Type}
)

// stringValues returns the Go strings of a list of known values.
func stringValues(vs []types.String) []string {
	out := make([]string, 0, len(vs))
	for _, v := range vs {
		out = append(out, v.ValueString())
	}
	return out
}

// stringList is a list value of strings.
func stringList(values []string) types.List {
	elems := make([]attr.Value, 0, len(values))
	for _, v := range values {
		elems = append(elems, types.StringValue(v))
	}
	return types.ListValueMust(types.StringType, elems)
}

// optionalString is null for "".
func optionalString(s string) types.String {
	if s == "" {
		return types.StringNull()
	}
	return types.StringValue(s)
}

// sansObject is the value of a { dns_names, ip_addresses } attribute.
func sansObject(s endpoints.SANs) types.Object {
	return types.ObjectValueMust(sansType, map[string]attr.Value{
		"dns_names": stringList(s.DNSNames), "ip_addresses": stringList(s.IPAddresses)})
}

// nodeURLMap is a map of node (or member) name to URL.
func nodeURLMap(values []endpoints.NodeEndpoint) types.Map {
	m := make(map[string]string, len(values))
	for _, v := range values {
		m[v.Name] = v.URL
	}
	return stringMap(m)
}

// stringMap is a map value of strings.
func stringMap(values map[string]string) types.Map {
	m := make(map[string]attr.Value, len(values))
	for k, v := range values {
		m[k] = types.StringValue(v)
	}
	return types.MapValueMust(types.StringType, m)
}

// durationOr is a duration attribute's value, or def where it is null or
// unknown (in a new resource's plan, where def is its default).
func durationOr(v types.String, def time.Duration) time.Duration {
	if !known(v) {
		return def
	}
	return durationOf(v)
}

// durationOf is a duration attribute's value; 0 when null or unknown.
// durationValidator parsed it at validation, with its error: a value that
// reaches a resource parses.
func durationOf(v types.String) time.Duration {
	d, _ := time.ParseDuration(v.ValueString())
	return d
}

// known reports whether a value is neither null nor unknown.
func known(v attr.Value) bool { return !v.IsNull() && !v.IsUnknown() }

// attributeTypes are the attribute types of a nested attribute's object.
func attributeTypes(a schema.Attribute) map[string]attr.Type {
	if object, ok := a.GetType().(attr.TypeWithAttributeTypes); ok {
		return object.AttributeTypes()
	}
	return nil // not an object: no attributes
}

// ptrOrZero is the object p points to, or with p nil (an optional nested
// attribute left unset) T's zero value, whose attributes are all null.
func ptrOrZero[T any](p *T) T {
	if p == nil {
		var zero T
		return zero
	}
	return *p
}

package provider

import (
	"regexp"

	"github.com/hashicorp/terraform-plugin-framework-validators/int64validator"
	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
)

// The validators every resource shares: each checks at plan time what the
// host or the kubelet would otherwise refuse only at apply.

var portValidator = []validator.Int64{int64validator.Between(1, 65535)}

// durationPattern accepts what Go, HAProxy and nginx all parse.
var durationPattern = regexp.MustCompile(`^[0-9]+(ms|s|m|h)$`)

func durationValidator() validator.String {
	return stringvalidator.RegexMatches(durationPattern, `must be a duration such as "500ms", "10s" or "10m"`)
}

// filePathPattern is an absolute, clean path to a file (no "." or ".."
// components, no trailing slash, no NUL or newline): what the SSH engine
// can carry safely.
var filePathPattern = regexp.MustCompile(`^(/(\.\.[^/\x00\n]+|\.[^./\x00\n][^/\x00\n]*|[^./\x00\n][^/\x00\n]*))+$`)

func filePathValidator() validator.String {
	return stringvalidator.RegexMatches(filePathPattern, `must be an absolute path to a file, such as "/etc/haproxy/haproxy.cfg", without "." or ".." components`)
}

// modePattern is permission bits in octal.
var modePattern = regexp.MustCompile(`^0?[0-7]{3,4}$`)

func modeValidator() validator.String {
	return stringvalidator.RegexMatches(modePattern, `must be octal permission bits such as "0644"`)
}

// accountPattern is a user or group name as useradd accepts it, or a
// numeric id.
var accountPattern = regexp.MustCompile(`^([a-z_][a-z0-9_.-]{0,31}\$?|[0-9]{1,10})$`)

func accountValidator() validator.String {
	return stringvalidator.RegexMatches(accountPattern, "must be a user or group name (lowercase letters, digits, '_', '-', '.') or a numeric id")
}

// dnsSubdomainPattern is a Kubernetes object name (RFC 1123 subdomain).
var dnsSubdomainPattern = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`)

func podNameValidator() validator.String {
	return stringvalidator.All(stringvalidator.LengthAtMost(253),
		stringvalidator.RegexMatches(dnsSubdomainPattern, "must be a Kubernetes object name: lowercase letters, digits, '-' and '.'"))
}

// quantityPattern is a Kubernetes resource quantity ("25m", "32M", "1.5Gi").
var quantityPattern = regexp.MustCompile(`^[0-9]+(\.[0-9]+)?(m|k|M|G|T|P|E|Ki|Mi|Gi|Ti|Pi|Ei)?$`)

func quantityValidator() validator.String {
	return stringvalidator.RegexMatches(quantityPattern, `must be a Kubernetes quantity such as "25m", "32M" or "64Mi"`)
}

// imagePattern is a container image reference: registry/name, a tag
// and/or a digest.
var imagePattern = regexp.MustCompile(`^[a-z0-9]+([._-][a-z0-9]+)*(:[0-9]+)?(/[a-z0-9]+([._-]+[a-z0-9]+)*)*(:[A-Za-z0-9_][A-Za-z0-9_.-]{0,127})?(@sha256:[a-f0-9]{64})?$`)

func imageValidator() validator.String {
	return stringvalidator.RegexMatches(imagePattern, `must be a container image reference such as "docker.io/library/haproxy:3.2.19-alpine"`)
}

// markerPattern is what a block marker may hold.
var markerPattern = regexp.MustCompile(`^[A-Za-z0-9._-]{1,64}$`)

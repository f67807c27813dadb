package provider

import (
	"context"
	"fmt"
	"math"
	stdpath "path"
	"regexp"
	"strings"
	"time"

	"github.com/hashicorp/terraform-plugin-framework-validators/int64validator"
	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/kha/terraform-provider-kha/internal/hostres"
	"github.com/kha/terraform-provider-kha/internal/problem"
	"github.com/kha/terraform-provider-kha/internal/remote"
)

// The validators every resource shares: each checks at plan time what the
// host or the kubelet would otherwise refuse only at apply.

var portValidator = []validator.Int64{int64validator.Between(1, 65535)}

// durationPattern accepts what Go, HAProxy and nginx all parse.
var durationPattern = regexp.MustCompile(`^[0-9]+(ms|s|m|h)$`)

// durationValidator accepts a duration that durationPattern matches and
// Go's time.Duration holds (up to about 290 years): the value the
// resource uses (durationOf), parsed here with its error.
func durationValidator() validator.String { return durationCheck{} }

type durationCheck struct{}

func (durationCheck) Description(context.Context) string {
	return `a duration such as "500ms", "10s" or "10m"`
}

func (c durationCheck) MarkdownDescription(ctx context.Context) string { return c.Description(ctx) }

func (c durationCheck) ValidateString(ctx context.Context, req validator.StringRequest, resp *validator.StringResponse) {
	if !known(req.ConfigValue) {
		return
	}
	s := req.ConfigValue.ValueString()
	if !durationPattern.MatchString(s) {
		resp.Diagnostics.AddAttributeError(req.Path, "Invalid Duration",
			fmt.Sprintf("%s must be %s, got: %q.", req.Path, c.Description(ctx), s))
		return
	}
	if _, err := time.ParseDuration(s); err != nil {
		resp.Diagnostics.AddAttributeError(req.Path, "Invalid Duration",
			fmt.Sprintf("%s is %q, longer than a duration can be (at most %s): set a shorter one.", req.Path, s,
				time.Duration(math.MaxInt64).Truncate(time.Hour)))
	}
}

// validateCommandPaths says what a validate_command gets: internal/remote
// replaces every %s in it (strings.ReplaceAll), so no literal one is left.
const validateCommandPaths = "Every `%s` in it is replaced by the quoted path of the uploaded copy, which is also " +
	"exported as `$KHA_NEW`, so a literal `%s` cannot be written: a command that needs printf-style text names the " +
	"copy `\"$KHA_NEW\"` and splits each `%s` with shell quotes, e.g. `printf '%''s\\n' \"$KHA_NEW\"`. The path is a " +
	"descriptor the command inherits (`/dev/fd/7`), so nothing another local user renames can change what it reads; a " +
	"relative `include` in the copy resolves against `/dev/fd/`, as it resolved against kha's private directory before."

func filePathValidator() validator.String {
	return stringvalidator.RegexMatches(hostres.FilePathPattern, `must be an absolute path to a file, such as "/etc/haproxy/haproxy.cfg", without "." or ".." components`)
}

// modePattern is permission bits in octal.
var modePattern = regexp.MustCompile(`^0?[0-7]{3,4}$`)

func modeValidator() validator.String {
	return stringvalidator.RegexMatches(modePattern, `must be octal permission bits such as "0644"`)
}

func accountValidator() validator.String {
	return stringvalidator.RegexMatches(problem.AccountPattern, "must be a user or group name (lowercase letters, digits, '_', '-', '.') or a numeric id")
}

// runAsPattern is root, or user:group.
var runAsPattern = regexp.MustCompile(`^root$|` + problem.UserGroupPattern.String())

func runAsValidator() validator.String {
	return stringvalidator.RegexMatches(runAsPattern, `must be user:group, each a name (lowercase letters, digits, '_', '-', '.') or a numeric id, or "root"`)
}

// dnsSubdomainPattern is a Kubernetes object name (RFC 1123 subdomain).
var dnsSubdomainPattern = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`)

func podNameValidator() validator.String {
	return stringvalidator.All(stringvalidator.LengthAtMost(253),
		stringvalidator.RegexMatches(dnsSubdomainPattern, "must be a Kubernetes object name: lowercase letters, digits, '-' and '.'"))
}

// hostNamePattern is a DNS name in lowercase whose last label starts
// with a letter, so that no IPv4 address matches.
var hostNamePattern = regexp.MustCompile(`^([a-z0-9]([-a-z0-9]*[a-z0-9])?\.)*[a-z]([-a-z0-9]*[a-z0-9])?$`)

// tlsServerNameValidator wants the DNS name a certificate holds and an SNI
// router matches.
func tlsServerNameValidator() validator.String {
	return stringvalidator.All(stringvalidator.LengthAtMost(253),
		stringvalidator.RegexMatches(hostNamePattern, "must be a DNS name in lowercase, such as k8s.example.com (an address sends no SNI)"))
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

// khaNamePattern is a name kha keeps for itself next to the files it
// manages (internal/remote/scripts.go): the directory's .kha-lock, a
// file's record directory .<name>.kha, its .<name>.kha.handover,
// .kha.previous and .kha.original, and the private work directories
// .<name>.kha-<random>. Any .kha-* and .<name>.kha.* name is kept, so a
// name kha adds later is covered too.
var khaNamePattern = regexp.MustCompile(`^\.(kha-.*|.+\.kha([.-].*)?)$`)

// khaNameIn is the first component of an absolute path that is one of
// kha's own names, or "".
func khaNameIn(p string) string {
	for _, c := range strings.Split(p, "/") {
		if khaNamePattern.MatchString(c) {
			return c
		}
	}
	return ""
}

// notKhaNameValidator refuses a path that is, or lies in, one of kha's
// own names: a resource writing there would overwrite kha's records of
// another file, or write records kha then trusts.
type notKhaNameValidator struct{}

func (notKhaNameValidator) Description(context.Context) string {
	return "must not be one of kha's own names (.kha-lock, .<name>.kha, .<name>.kha.handover, .<name>.kha.previous, " +
		".<name>.kha.original, .<name>.kha-<anything>)"
}

func (v notKhaNameValidator) MarkdownDescription(ctx context.Context) string {
	return v.Description(ctx)
}

func (notKhaNameValidator) ValidateString(_ context.Context, req validator.StringRequest, resp *validator.StringResponse) {
	if !known(req.ConfigValue) {
		return
	}
	p := req.ConfigValue.ValueString()
	if name := khaNameIn(p); name != "" {
		resp.Diagnostics.AddAttributeError(req.Path, "Path Is One of kha's Own Names", fmt.Sprintf("%s %q: %q is a name "+
			"kha keeps for itself next to the files it manages (.kha-lock, .<name>.kha, .<name>.kha.handover, "+
			".<name>.kha.previous, .<name>.kha.original, .<name>.kha-<anything>). A resource that wrote there would "+
			"overwrite or forge kha's records of another file. Choose another path for %s.", req.Path, p, name, req.Path))
	}
}

// nameMaxValidator refuses a file name too long for kha's private names
// beside it (remote.MaxManagedName).
type nameMaxValidator struct{}

func (nameMaxValidator) Description(context.Context) string {
	return fmt.Sprintf("the file name must be at most %d bytes long", remote.MaxManagedName)
}

func (v nameMaxValidator) MarkdownDescription(ctx context.Context) string {
	return v.Description(ctx)
}

func (nameMaxValidator) ValidateString(_ context.Context, req validator.StringRequest, resp *validator.StringResponse) {
	if !known(req.ConfigValue) {
		return
	}
	if name := stdpath.Base(req.ConfigValue.ValueString()); len(name) > remote.MaxManagedName {
		resp.Diagnostics.AddAttributeError(req.Path, "File Name Too Long", fmt.Sprintf("%s: the file name is %d bytes long; "+
			"a file kha manages has a name of at most %d bytes, because kha keeps .<name>.kha-<12 hex digits> beside it and "+
			"no file name may exceed 255 bytes (NAME_MAX). Choose a shorter name for %s.", req.Path, len(name), remote.MaxManagedName, req.Path))
	}
}

// managedPathValidator is filePathValidator for a file kha writes: it
// also refuses kha's own names, and names too long for kha's beside them.
func managedPathValidator() validator.String {
	return stringvalidator.All(filePathValidator(), notKhaNameValidator{}, nameMaxValidator{})
}

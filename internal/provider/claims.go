package provider

import (
	"cmp"
	"fmt"
	"net"
	stdpath "path"
	"slices"
	"strings"
	"sync"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-go/tftypes"

	"github.com/kha/terraform-provider-kha/internal/lbconfig"
	"github.com/kha/terraform-provider-kha/internal/remote"
)

// This file keeps one configuration from giving one file to two
// resources. At plan time every host resource claims the places it keeps
// on its host: a whole file, or a marked block of one. A resource that
// claims a place another resource of the same Terraform walk claimed
// already fails its plan, naming the other. Without the check both applies
// succeed, each overwriting the other, and every later plan changes one of
// them back.

// claims is one walk's record of which resource keeps what where. The
// provider's Configure makes a new one, so each walk (plan, apply) starts
// empty and provider instances never share one. Terraform plans resources
// in parallel: the mutex orders the claims.
type claims struct {
	mu     sync.Mutex
	byFile map[claimedFile][]claim
}

func newClaims() *claims { return &claims{byFile: map[claimedFile][]claim{}} }

// claimedFile is a file on a host. host is the connection's address
// (claimHost), path the file's.
type claimedFile struct{ host, path string }

// claim is one resource's hold on a file, or on a block of it.
type claim struct {
	// marker is the block's; "" is the whole file.
	marker string
	// owner names the resource in another's plan error (claimant), and
	// id is its id (host:port:path of its first file), which
	// `terraform state list -id` finds.
	owner, id string
	// digest is what the resource renders, all of its files (sha256):
	// the same resource planned twice in one walk (a replacement plans
	// the new object after the old) claims the same again.
	digest string
	// attr is the attribute that sets the path, as the plan error says
	// it ("config_path", "paths[1]"); "" when none was found.
	attr string
	// move, when set, is how the resource gives the file up, better than
	// "set <attr> to another file" (claimMover), and see the
	// documentation that shows it.
	move, see string
}

// overlaps says whether two holds on one file collide: the whole file
// collides with everything in it, a block with a block of its marker.
func (c claim) overlaps(o claim) bool {
	return c.marker == "" || o.marker == "" || c.marker == o.marker
}

// same says whether two claims are one resource's, planned twice.
func (c claim) same(o claim) bool {
	return c.owner == o.owner && c.digest == o.digest && c.marker == o.marker
}

// take records c on f and returns the claims of other resources it
// collides with, sorted. A collision is recorded too, so that a third
// resource on the file names both before it.
func (cs *claims) take(f claimedFile, c claim) []claim {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	var others []claim
	for _, o := range cs.byFile[f] {
		if c.same(o) {
			return nil
		}
		if c.overlaps(o) {
			others = append(others, o)
		}
	}
	cs.byFile[f] = append(cs.byFile[f], c)
	slices.SortFunc(others, func(a, b claim) int {
		return cmp.Or(cmp.Compare(a.owner, b.owner), cmp.Compare(a.marker, b.marker), cmp.Compare(a.digest, b.digest))
	})
	return others
}

// claimant is a model as another resource's plan error names it: its
// type and the values that tell it apart from others of its type, e.g.
// `kha_haproxy_config with role = "external" listening on 10.0.0.100:8443`.
// Every host model is one (hostModel).
type claimant interface {
	claimName() string
}

// claimMover is a model that says how it gives up the file that attr sets
// better than "set <attr> to another file", and which documentation
// shows it ("" for none).
type claimMover interface {
	claimMove(attr string) (move, see string)
}

// claim takes, for a planned resource, each place it keeps on its host,
// which must be known (m.addressKnown). A place that another resource of
// this walk keeps is an error at the attribute that sets its path.
func (d *providerData) claim(m resolvedSSH, model claimant, digest string, files []remote.Item, plan tftypes.Value) diag.Diagnostics {
	var diags diag.Diagnostics
	if d == nil || d.claims == nil || slices.Contains(m.unknown, "bastion_host") || slices.Contains(m.unknown, "bastion_port") {
		return diags // which network the host is in is not known yet
	}
	owner, id := model.claimName(), hostID(m.cfg, files)
	host := claimHost(m.cfg)
	for _, f := range files {
		p, marker := f.Place()
		attr := placeAttribute(plan, p)
		c := claim{marker: marker, owner: owner, id: id, digest: digest}
		if attr != nil {
			c.attr = attr.String()
			if mover, ok := model.(claimMover); ok {
				c.move, c.see = mover.claimMove(c.attr)
			}
		}
		others := d.claims.take(claimedFile{host, p}, c)
		if len(others) == 0 {
			continue
		}
		at := path.Root("ssh")
		if attr != nil {
			at = *attr
		}
		summary, detail := conflictMessage(m.cfg.Address()+":"+p, c, others)
		diags.AddAttributeError(at, summary, detail)
	}
	return diags
}

// claimHost is the address that says which machine a connection reaches:
// host:port with the host in one spelling (IP addresses canonical, names
// in lower case), after the bastion's when there is one (the same private
// address behind two bastions is two machines).
func claimHost(cfg remote.Config) string {
	canonical := func(c remote.Config) string {
		host, port, err := net.SplitHostPort(c.Address())
		if err != nil {
			return c.Address()
		}
		if ip := net.ParseIP(host); ip != nil {
			host = ip.String()
		}
		return net.JoinHostPort(strings.ToLower(host), port)
	}
	if cfg.Bastion != nil {
		return canonical(*cfg.Bastion) + " > " + canonical(cfg)
	}
	return canonical(cfg)
}

// placeAttribute finds the attribute of a plan that sets a file's path:
// a string attribute with the path as its value, or an element of a list
// or set of strings; names that end in "path" or "paths" first, then in
// name order. nil when none has the value.
func placeAttribute(plan tftypes.Value, file string) *path.Path {
	var attrs map[string]tftypes.Value
	if plan.As(&attrs) != nil {
		return nil
	}
	names := make([]string, 0, len(attrs))
	for name := range attrs {
		names = append(names, name)
	}
	pathLike := func(name string) bool { return strings.HasSuffix(name, "path") || strings.HasSuffix(name, "paths") }
	slices.SortFunc(names, func(a, b string) int {
		if pathLike(a) != pathLike(b) {
			if pathLike(a) {
				return -1
			}
			return 1
		}
		return cmp.Compare(a, b)
	})
	for _, name := range names {
		v := attrs[name]
		var s string
		if v.Type().Is(tftypes.String) && v.IsFullyKnown() && v.As(&s) == nil && s == file {
			p := path.Root(name)
			return &p
		}
		var elems []tftypes.Value
		if !(v.Type().Is(tftypes.List{}) || v.Type().Is(tftypes.Set{})) || !v.IsFullyKnown() || v.As(&elems) != nil {
			continue
		}
		for i, e := range elems {
			if e.Type().Is(tftypes.String) && e.As(&s) == nil && s == file {
				p := path.Root(name).AtListIndex(i)
				return &p
			}
		}
	}
	return nil
}

// conflictMessage is the summary and detail of a claim that collides
// with others on the file at where (host:port:path).
func conflictMessage(where string, c claim, others []claim) (string, string) {
	// Two resources of one type may not differ in what names them.
	name := func(o claim) string {
		if o.owner == c.owner {
			return "another " + o.owner
		}
		return o.owner
	}
	// The others are named by their ids too, which find them in the state.
	names := make([]string, len(others))
	blocks, wholes := 0, 0
	for i, o := range others {
		names[i] = fmt.Sprintf("%s (id %s)", name(o), o.id)
		if o.marker == "" {
			wholes++
		} else {
			blocks++
		}
	}
	var b strings.Builder
	summary := "File Managed by Two Resources"
	switch {
	case c.marker == "" && blocks == 0:
		fmt.Fprintf(&b, "This %s and %s both manage %s. Each apply overwrites what the other wrote, and every later "+
			"plan changes it back: no configuration of the two stays on the host.", c.owner, strings.Join(names, " and "), where)
	case c.marker != "" && wholes == 0:
		summary = "Block Managed by Two Resources"
		fmt.Fprintf(&b, "This %s and %s both manage the block %q (`# BEGIN kha %s`) of %s. Each apply replaces the "+
			"other's lines, and every later plan changes them back.", c.owner, strings.Join(names, " and "), c.marker, c.marker, where)
	default:
		fmt.Fprintf(&b, "This %s (%s) and ", c.owner, holdOf(c))
		for i, o := range others {
			if i > 0 {
				b.WriteString(" and ")
			}
			fmt.Fprintf(&b, "%s (id %s; %s)", name(o), o.id, holdOf(o))
		}
		fmt.Fprintf(&b, " both manage %s. Writing the whole file drops the block, and putting the block back changes "+
			"the file: every apply undoes the other, and every later plan changes it back.", where)
	}
	place := "file"
	if c.marker != "" && wholes == 0 {
		place = "block"
	}
	fmt.Fprintf(&b, "\n\nGive the %s to one of them: on this resource, %s", place, moveOf(c, others))
	sees := []string{c.see}
	for _, o := range others {
		fmt.Fprintf(&b, "; or on %s, %s", name(o), moveOf(o, []claim{c}))
		sees = append(sees, o.see)
	}
	b.WriteString(". A resource already applied is found by its id: terraform state list -id=<id> (OpenTofu: tofu state list -id=<id>).")
	slices.Sort(sees)
	for _, see := range slices.Compact(sees) {
		if see != "" {
			b.WriteString(" See " + see + ".")
		}
	}
	return summary, b.String()
}

// holdOf says what of the file a claim holds.
func holdOf(c claim) string {
	if c.marker == "" {
		return "the whole file"
	}
	return fmt.Sprintf("its block %q", c.marker)
}

// moveOf says how c's resource gives up the place it shares with others.
func moveOf(c claim, others []claim) string {
	attr := "the attribute that sets the path"
	if c.attr != "" {
		attr = "`" + c.attr + "`"
	}
	switch {
	case c.move != "":
		return c.move
	case c.marker != "" && !slices.ContainsFunc(others, func(o claim) bool { return o.marker == "" }):
		return fmt.Sprintf("set `marker` to a name of its own (each block needs one), or %s to another file", attr)
	default:
		return fmt.Sprintf("set %s to another file", attr)
	}
}

// The models' names in a conflict.

func (m *fileModel) claimName() string {
	return fmt.Sprintf("kha_file with path = %q", m.Path.ValueString())
}

func (m *hostsEntriesModel) claimName() string {
	name := fmt.Sprintf("kha_hosts_entries with marker = %q", m.Marker.ValueString())
	if len(m.Entries) > 0 {
		name += fmt.Sprintf(" and entries = [%q", m.Entries[0].ValueString())
		if len(m.Entries) > 1 {
			name += ", …"
		}
		name += "]"
	}
	return name
}

func (m *keepalivedConfigModel) claimName() string {
	return fmt.Sprintf("kha_keepalived_config with vip = %q, virtual_router_id = %d", m.VIP.ValueString(), m.VirtualRouterID.ValueInt64())
}

func (m *kubeVIPModel) claimName() string {
	return fmt.Sprintf("kha_kube_vip with address = %q", m.Address.ValueString())
}

func (m *etcdAccessModel) claimName() string {
	return fmt.Sprintf("kha_etcd_access with mode = %q", m.Mode.ValueString())
}

func (m *kubeconfigServerModel) claimName() string {
	return fmt.Sprintf("kha_kubeconfig_server with server = %q", m.Server.ValueString())
}

// claimMove: a kubeconfig's path is an element of `paths`.
func (m *kubeconfigServerModel) claimMove(attr string) (string, string) {
	return fmt.Sprintf("take the kubeconfig out of `paths` (`%s`) and let the other resource set its server (a kha_file "+
		"writes the whole kubeconfig, `server` included)", attr), ""
}

func (m *servingCertificateModel) claimName() string {
	return fmt.Sprintf("kha_apiserver_serving_certificate with certificate_path = %q", m.CertificatePath.ValueString())
}

func (m *haproxyConfigModel) claimName() string { return m.lbClaimName(haproxyKind) }

func (m *nginxConfigModel) claimName() string { return m.lbClaimName(nginxKind) }

func (m *haproxyConfigModel) claimMove(attr string) (string, string) {
	return m.lbClaimMove(haproxyKind, attr)
}

func (m *nginxConfigModel) claimMove(attr string) (string, string) {
	return m.lbClaimMove(nginxKind, attr)
}

// lbClaimName is a load balancer's name in a conflict: its role and where
// it listens.
func (m *lbConfigModel) lbClaimName(k lbKind) string {
	name := fmt.Sprintf("kha_%s_config with role = %q", k.lb, m.Role.ValueString())
	if m.Listen != nil {
		name += " listening on " + net.JoinHostPort(m.Listen.Address.ValueString(), fmt.Sprint(m.Listen.Port.ValueInt64()))
	}
	return name
}

// coLocatedDoc names the documentation of two load balancers on one node.
const coLocatedDoc = `"Running a node-local and an external load balancer on one node"`

// lbClaimMove is how a load balancer gives up a file, as the section
// coLocatedDoc of its documentation shows: a service of its own (the
// systemd template unit of kha_etcd_access's example, which reads
// /etc/kha/<instance>-proxy.<ext>), or for a static pod a directory and a
// pod name of its own.
func (m *lbConfigModel) lbClaimMove(k lbKind, attr string) (string, string) {
	instance := "local"
	if m.Role.ValueString() == string(lbconfig.External) {
		instance = "external"
	}
	see := fmt.Sprintf("%s in the kha_%s_config documentation", coLocatedDoc, k.lb)
	unit := fmt.Sprintf("%s@%s", k.lb, instance)
	switch {
	case attr == "manifest_path":
		ext := stdpath.Ext(k.manifestPath)
		return fmt.Sprintf("set `manifest_path = \"%s-%s%s\"` and `pod_name = \"%s-%s\"`, with `config_path` in a directory of its own",
			strings.TrimSuffix(k.manifestPath, ext), instance, ext, k.lb, instance), see
	case attr != "config_path":
		return fmt.Sprintf("set `%s` to another file", attr), ""
	case m.Delivery.ValueString() == deliveryStaticPod:
		return fmt.Sprintf("set `config_path = \"%s-%s/%s\"` (the pod reads the file of that name in the config's directory)",
			stdpath.Dir(k.configPath), instance, stdpath.Base(k.configPath)), see
	}
	pid := ""
	if k.lb == lbconfig.Nginx { // nginx writes the PID file its config names; HAProxy's unit passes one
		pid = fmt.Sprintf(", `pid_file = \"/run/%s.pid\"`", strings.ReplaceAll(unit, "@", "-"))
	}
	return fmt.Sprintf("run it as a service of its own: set `config_path = \"/etc/kha/%s-proxy%s\"`%s, "+
		"`reload_command = \"systemctl enable %s && systemctl reload-or-restart %s\"` and `destroy_command = \"systemctl disable --now %s\"`, "+
		"with the template unit %s@.service from a kha_file (Debian and Ubuntu ship none)",
		instance, stdpath.Ext(k.configPath), pid, unit, unit, unit, k.lb), see
}

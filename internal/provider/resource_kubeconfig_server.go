package provider

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"net/url"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/terraform-plugin-framework-validators/listvalidator"
	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/booldefault"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/mapplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringdefault"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/kha/terraform-provider-kha/internal/hostres"
	"github.com/kha/terraform-provider-kha/internal/kubeconfig"
	"github.com/kha/terraform-provider-kha/internal/remote"
)

var (
	_ resource.ResourceWithConfigure        = (*kubeconfigServerResource)(nil)
	_ resource.ResourceWithModifyPlan       = (*kubeconfigServerResource)(nil)
	_ resource.ResourceWithConfigValidators = (*kubeconfigServerResource)(nil)
	_ resource.ResourceWithImportState      = (*kubeconfigServerResource)(nil)
)

// NewKubeconfigServerResource is the constructor of kha_kubeconfig_server.
func NewKubeconfigServerResource() resource.Resource {
	return &kubeconfigServerResource{hostres.Resource[kubeconfigServerModel, *kubeconfigServerModel]{Name: "kubeconfig_server"}}
}

type kubeconfigServerResource struct {
	hostres.Resource[kubeconfigServerModel, *kubeconfigServerModel]
}

// The lifecycle's optional hooks the model implements (internal/hostres/hooks.go).
var (
	_ hostres.ConflictMover = (*kubeconfigServerModel)(nil)
	_ hostres.HostReader    = (*kubeconfigServerModel)(nil)
)

type kubeconfigServerModel struct {
	hostres.Common
	Paths           []types.String `tfsdk:"paths"`
	Server          types.String   `tfsdk:"server"`
	ClusterName     types.String   `tfsdk:"cluster_name"`
	RestartCommand  types.String   `tfsdk:"restart_command"`
	Verify          types.Bool     `tfsdk:"verify"`
	VerifyTimeout   types.String   `tfsdk:"verify_timeout"`
	PreviousServers types.Map      `tfsdk:"previous_servers"`
	TLSServerName   types.String   `tfsdk:"tls_server_name"`
	PreviousTLS     types.Map      `tfsdk:"previous_tls_server_names"`
	// found are the endpoints the kubeconfigs have, by path and cluster,
	// once readHost has read them.
	found map[string]map[string]kubeconfig.Endpoint
	// keptOnDestroy says, by path, why a destroy keeps kha's server: the
	// recorded one would not work (see readHost).
	keptOnDestroy map[string]error
}

// kubeletConfig is the kubeconfig whose change needs a kubelet restart.
const kubeletConfig = "kubelet.conf"

var previousServersType = types.MapType{ElemType: types.StringType}

func (m *kubeconfigServerModel) Fields() *hostres.Common { return &m.Common }

func (r *kubeconfigServerResource) Schema(ctx context.Context, _ resource.SchemaRequest, resp *resource.SchemaResponse) {
	attrs := map[string]schema.Attribute{
		"paths": schema.ListAttribute{
			Required: true, ElementType: types.StringType,
			Validators: []validator.List{listvalidator.SizeAtLeast(1), listvalidator.UniqueValues(), listvalidator.ValueStringsAre(managedPathValidator())},
			MarkdownDescription: "Kubeconfigs on the host to point at `server`: `/etc/kubernetes/kubelet.conf` on every node; on " +
				"control-plane nodes also `admin.conf`, `controller-manager.conf` and `scheduler.conf` where they should use it.",
		},
		"server": schema.StringAttribute{
			Required: true, Validators: []validator.String{serverURLValidator{}},
			MarkdownDescription: "The apiserver URL, usually `kha_cluster_endpoints.<name>.node_endpoints[<node>]`.",
		},
		"tls_server_name": schema.StringAttribute{
			Optional: true, Validators: []validator.String{tlsServerNameValidator()},
			MarkdownDescription: "The name each cluster's clients send in TLS's SNI and verify the apiserver's certificate " +
				"for (the kubeconfig's `tls-server-name`), instead of `server`'s host. Set it where `server` is a node-local " +
				"load balancer (`https://localhost:<port>`) that can fall back to a load balancer routing by SNI: the client " +
				"would otherwise send `localhost`, which such a load balancer cannot route. Use the external load balancer's " +
				"name (`kha_cluster_endpoints`' `lb_domain_name`), which is among the apiserver certificate's SANs. The check " +
				"(`verify`) sends it too. Unset, each cluster keeps the `tls-server-name` it had before kha set one " +
				"(`previous_tls_server_names`), and destroy puts that back.",
		},
		"cluster_name": schema.StringAttribute{
			Optional:            true,
			MarkdownDescription: "Only the cluster of this name in each kubeconfig (kubeadm names it `kubernetes`). Default: every cluster.",
		},
		"restart_command": schema.StringAttribute{
			Optional: true, Computed: true,
			MarkdownDescription: "Run once, after the last kubeconfig that changes, then the check runs again; if either fails, " +
				"every kubeconfig this apply changed gets its previous server back and the command runs again. Default: " +
				"`systemctl restart kubelet` when a path is a `kubelet.conf`, else none. Processes that read the other " +
				"kubeconfigs (kube-controller-manager, kube-scheduler) read them at start.",
		},
		"verify": schema.BoolAttribute{
			Optional: true, Computed: true, Default: booldefault.StaticBool(true),
			MarkdownDescription: "Before a changed kubeconfig replaces the old one, prove that it works, with its own " +
				"credentials, from the host: kha reads the kubeconfig and the certificate files it names (over the same SSH " +
				"connection, never into state or logs), connects from the host to the new server through the SSH connection, " +
				"verifies the apiserver against the kubeconfig's CA and TLS server name as its clients do, and wants `200` from " +
				"`GET /readyz` with the kubeconfig's client certificate or token. Otherwise the file stays as it was and the apply " +
				"fails with what went wrong (`x509: certificate is valid for …`, `HTTP 401`, a refused connection). The same check " +
				"runs after `restart_command`. It needs TCP forwarding allowed for the SSH user; kubeconfigs whose credentials come " +
				"from an exec plugin cannot be checked: set `false` for them. Unlike kubespray, which rewrites `server:` with " +
				"`lineinfile`/`sed` and restarts, kha never writes a server the node could not use. Default `true`.",
		},
		"verify_timeout": schema.StringAttribute{
			Optional: true, Computed: true, Default: stringdefault.StaticString("30s"), Validators: []validator.String{durationValidator()},
			MarkdownDescription: "How long each check may take. Within it, an apiserver that is not ready yet (a `5xx` " +
				"answer during an etcd election, a refused connection while it restarts) is asked again every 250 ms; a TLS " +
				"failure or a refusal of the credentials fails at once. Destroy's check of the recorded servers " +
				"(`previous_servers`), which nothing restarts, also ends at once on a name the node does not resolve or " +
				"a port nobody listens on (a refused connection). Default `30s`.",
		},
		"previous_servers": schema.MapAttribute{
			Computed: true, ElementType: previousServersType,
			PlanModifiers: []planmodifier.Map{mapplanmodifier.UseStateForUnknown()},
			MarkdownDescription: "The servers before kha changed them, by path and cluster name, read from the host before " +
				"the first change (at create, or when a path is added to `paths`) or at import. Destroy puts them back, with the " +
				"same check, so a node is never left pointing at nothing: a kubeconfig whose recorded server would not work any " +
				"more (a port or address that a handover moved away from) keeps kha's server, and destroy says so in a warning " +
				"with the ways out, instead of failing. The kubelet restarts once, after the last kubeconfig put back. A " +
				"cluster that already has `server` when its path is first read (kubeadm's own server, adopted as it is) is recorded with it, and destroy puts it back after later " +
				"moves. An apply that fails once a kubeconfig was changed (say, " +
				"the connection is lost while `restart_command` runs with `verify = false`) keeps the resource in state with " +
				"these servers, a create as tainted: the next apply, or destroy, puts them back.",
		},
		"previous_tls_server_names": schema.MapAttribute{
			Computed: true, ElementType: previousServersType,
			PlanModifiers: []planmodifier.Map{mapplanmodifier.UseStateForUnknown()},
			MarkdownDescription: "The `tls-server-name` of each cluster before kha set one (`\"\"` for none), by path and " +
				"cluster name, read from the host when `tls_server_name` first applies to a path. Null until then. Destroy, and " +
				"an apply with `tls_server_name` unset, put them back.",
		},
	}
	resp.Schema = schema.Schema{
		MarkdownDescription: "Points a node's kubeconfigs at its apiserver endpoint, on a running cluster: the `server` of " +
			"their clusters (and, with `tls_server_name`, their `tls-server-name`), and nothing else. The kubeconfigs are edited with a YAML parser, and only the bytes of the " +
			"server values change (and a `tls-server-name` line is added or removed): client certificates the kubelet rotates, contexts, extensions and comments stay as " +
			"they are. A rotated credential is not drift; a changed `server` is.\n\n" +
			"Each change is proven before it is made (see `verify`), written atomically only if the file did not change " +
			"since kha read it, followed by `restart_command` and the check again, and rolled back if either fails; a " +
			"failure on one kubeconfig puts back those the same apply changed before it. " +
			"Nothing of a kubeconfig's content reaches state, plan or logs: only paths, servers and digests.\n\n" +
			"Order matters on a live cluster: the endpoint must serve before a kubeconfig points at it. Give the resource " +
			"`depends_on` the load balancer resources that serve the endpoint; Terraform then deploys and verifies them first " +
			"and, when moving back, points the kubeconfigs away before it removes them. Likewise the `kha_hosts_entries` " +
			"that make a server's name resolve on the node, the recorded servers' included: destroy then puts the " +
			"kubeconfigs back before it removes the names.\n\n" +
			"A kubeconfig that `kha_file` writes is that resource's whole, `server` included: put the server in its " +
			"`content` (from `kha_cluster_endpoints`). A plan that gives one kubeconfig to both resources, or to two of " +
			"these, fails and names the other resource by its id.\n\n" +
			"Import with `host:port:path`, several paths separated by commas.",
		Attributes: hostres.WithHostAttributes(ctx, attrs, "`host:port:path` of the first kubeconfig.",
			"Digest of the servers the configuration wants; `remote_sha256` is the digest of what the host's kubeconfigs have."),
	}
}

// serverURLValidator wants an https URL with a host, as kubeconfigs do.
type serverURLValidator struct{}

func (serverURLValidator) Description(context.Context) string {
	return "must be an https URL such as https://127.0.0.1:6443"
}
func (v serverURLValidator) MarkdownDescription(ctx context.Context) string {
	return v.Description(ctx)
}
func (v serverURLValidator) ValidateString(ctx context.Context, req validator.StringRequest, resp *validator.StringResponse) {
	if !known(req.ConfigValue) {
		return
	}
	if err := checkServerURL(req.ConfigValue.ValueString()); err != nil {
		resp.Diagnostics.AddAttributeError(req.Path, "Invalid Server URL", err.Error())
	}
}

func checkServerURL(s string) error {
	u, err := url.Parse(s)
	if err != nil || u.Scheme != "https" || u.Hostname() == "" || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.User != nil {
		return fmt.Errorf("%q is not an apiserver URL: use https://<host>:<port>, e.g. kha_cluster_endpoints' node_endpoints", s)
	}
	if p := u.Port(); p != "" {
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			return fmt.Errorf("%q has an invalid port", s)
		}
	}
	return nil
}

func (m *kubeconfigServerModel) Render(config *kubeconfigServerModel) (hostres.Rendered, diag.Diagnostics) {
	var diags diag.Diagnostics
	restart := m.RestartCommand
	if !known(restart) {
		restart = types.StringValue("")
		for _, p := range m.Paths {
			if filepath.Base(p.ValueString()) == kubeletConfig {
				restart = types.StringValue("systemctl restart kubelet")
			}
		}
	}
	m.RestartCommand = restart
	recorded, recordedTLS := m.records(&diags)
	if config != nil {
		m.PreviousServers = m.toRecord(m.PreviousServers, recorded, serverOf, &diags)
		if m.TLSServerName.ValueString() != "" || len(recordedTLS) > 0 { // recorded from the first apply that sets a name
			m.PreviousTLS = m.toRecord(m.PreviousTLS, recordedTLS, tlsNameOf, &diags)
		} else {
			m.PreviousTLS = types.MapNull(previousServersType)
		}
	}
	out := hostres.Rendered{AlwaysDelivered: true}
	var edits []*remote.EditedFile        // out.files, to set their reload commands
	var kubeconfigEdits []*kubeconfigEdit // their edits
	for _, p := range m.Paths {
		edit := m.edit(p.ValueString(), recorded, recordedTLS)
		f := &remote.EditedFile{Path: p.ValueString(), Edit: edit, Credentials: true}
		edits, kubeconfigEdits = append(edits, f), append(kubeconfigEdits, edit)
		out.Files = append(out.Files, f)
	}
	if m.found == nil {
		// Not knowing which kubeconfigs change, restart after each.
		for _, f := range edits {
			f.ReloadCommand = restart.ValueString()
		}
		return out, diags
	}
	// Restart once, after the last kubeconfig that changes (destroy takes
	// them back last first); a failure puts back the ones changed before it.
	changes := func(i int) bool {
		edit, found := kubeconfigEdits[i], m.found[edits[i].Path]
		if config == nil { // destroy: back to what was there
			return !maps.Equal(edit.undone(found), found)
		}
		return !maps.Equal(edit.applied(found), found)
	}
	restartAfter := -1
	if config != nil {
		out.Rollback = make([]*remote.EditedFile, len(edits))
	}
	for i, f := range edits {
		if !changes(i) || m.keptOnDestroy[f.Path] != nil {
			continue
		}
		if config == nil && restartAfter >= 0 {
			continue
		}
		if restartAfter = i; config != nil {
			was := m.found[f.Path]
			out.Rollback[i] = &remote.EditedFile{Path: f.Path, Edit: &kubeconfigEdit{cluster: m.ClusterName.ValueString(),
				previous: clusterValues(was, serverOf), previousTLS: clusterValues(was, tlsNameOf)}}
		}
	}
	if restartAfter >= 0 {
		edits[restartAfter].ReloadCommand = restart.ValueString()
	}
	if len(m.keptOnDestroy) > 0 {
		out.Files = m.keepOnDestroy(edits, recorded, &diags)
	}
	return out, diags
}

// keepOnDestroy is edits without those whose recorded servers would not
// work, with a warning for each: the kubeconfig keeps kha's server.
func (m *kubeconfigServerModel) keepOnDestroy(edits []*remote.EditedFile, recorded map[string]map[string]string, diags *diag.Diagnostics) []remote.Item {
	var files []remote.Item
	for _, f := range edits {
		err := m.keptOnDestroy[f.Path]
		if err == nil {
			files = append(files, f)
			continue
		}
		cause, final := keptBecause(err)
		without := " To put the recorded server back without the check, set verify = false and apply, then destroy."
		if final {
			without = "" // it would not work either way
		}
		diags.AddWarning("Kubeconfig Kept on Its Current Server", fmt.Sprintf("kha_kubeconfig_server %q: %s keeps %s: "+
			"putting back %s, what it had before kha changed it, would not work from the host: %s.\n\n"+
			"Nothing was written, and kha no longer manages the file. If what serves the current server goes away too "+
			"(its load balancer in the same destroy), the node loses this path to the apiserver: before destroying, set "+
			"`server` to an endpoint that stays (the node's own apiserver, another load balancer) and apply.%s",
			m.ID.ValueString(), f.Path, serversState(clusterValues(m.found[f.Path], serverOf)), serversState(recorded[f.Path]), cause, without))
	}
	return files
}

// keptBecause says why a recorded server would not work. For what no
// wait heals (a name the node does not resolve, a port nobody listens on)
// it is the cause in destroy's words, with its fix, and final.
func keptBecause(err error) (cause string, final bool) {
	var unserved *kubeconfig.UnservedError
	switch {
	case !errors.As(err, &unserved):
		return err.Error(), false
	case unserved.Why == kubeconfig.NameUnknown:
		return fmt.Sprintf("the name %s does not resolve on the node; if it came from a kha_hosts_entries block, this destroy "+
			"removed that block first: give kha_kubeconfig_server depends_on = [kha_hosts_entries.<name>] so kubeconfigs go "+
			"back before the names", unserved.Host), true
	}
	return fmt.Sprintf("the recorded server's port %s on %s is no longer served (connection refused): nothing listens there any more",
		unserved.Port, unserved.Host), true
}

// records are what the kubeconfigs had before kha, as recorded: the
// servers and the tls-server-names, by path and cluster.
func (m *kubeconfigServerModel) records(diags *diag.Diagnostics) (servers, tlsNames map[string]map[string]string) {
	return recordedValues(m.PreviousServers, "previous_servers", diags), recordedValues(m.PreviousTLS, "previous_tls_server_names", diags)
}

// edit is the change of the kubeconfig at path, which takes itself back
// to what the records hold for it.
func (m *kubeconfigServerModel) edit(path string, servers, tlsNames map[string]map[string]string) *kubeconfigEdit {
	return &kubeconfigEdit{server: m.Server.ValueString(), tlsServerName: m.TLSServerName.ValueString(), cluster: m.ClusterName.ValueString(),
		previous: servers[path], previousTLS: tlsNames[path], checkTimeout: m.checkTimeout()}
}

// checkTimeout bounds each check of a kubeconfig (`verify_timeout`); 0
// when `verify = false`.
func (m *kubeconfigServerModel) checkTimeout() time.Duration {
	if m.Verify.Equal(types.BoolValue(false)) {
		return 0
	}
	return durationOr(m.VerifyTimeout, 30*time.Second)
}

// ReadHost records the servers each kubeconfig has before kha changes
// it: what `previous_servers` gets for a path it does not hold yet, and
// which kubeconfigs a change touches. A kubeconfig that is gone has none.
// A destroy also checks, as the change itself would, each kubeconfig with
// its recorded servers put back: one that would not work is kept.
func (m *kubeconfigServerModel) ReadHost(ctx context.Context, c hostres.Host, destroying bool) error {
	m.found = map[string]map[string]kubeconfig.Endpoint{}
	m.keptOnDestroy = map[string]error{}
	var recorded, recordedTLS map[string]map[string]string
	if destroying {
		var diags diag.Diagnostics
		if recorded, recordedTLS = m.records(&diags); diags.HasError() {
			return errors.New(hostres.Summary(diags))
		}
	}
	for _, p := range m.Paths {
		content, err := c.ReadFile(ctx, p.ValueString())
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return err
		}
		endpoints, err := kubeconfig.Endpoints(content, m.ClusterName.ValueString())
		if err != nil {
			return fmt.Errorf("%s: %w", p.ValueString(), err)
		}
		m.found[p.ValueString()] = endpoints
		if destroying {
			if err := m.edit(p.ValueString(), recorded, recordedTLS).wouldWorkUndone(ctx, c, content); err != nil {
				tflog.Warn(ctx, "the recorded server would not work; the kubeconfig keeps kha's", map[string]any{"path": p.ValueString(), "error": err.Error()})
				m.keptOnDestroy[p.ValueString()] = err
			}
		}
	}
	return nil
}

// toRecord is a record of what the kubeconfigs had before kha
// (`previous_servers`, `previous_tls_server_names`, now v) for the paths in
// `paths`: the values recorded before for the paths that have them (a
// path added later is recorded when it is first changed), the host's
// (field of what readHost found) for the others once read, and unknown
// until then. What it takes from the host joins recorded.
func (m *kubeconfigServerModel) toRecord(v types.Map, recorded map[string]map[string]string, field func(kubeconfig.Endpoint) string,
	diags *diag.Diagnostics) types.Map {
	if v.IsUnknown() && m.found == nil {
		return v // a new resource's plan
	}
	elems := map[string]attr.Value{}
	for _, p := range m.Paths {
		servers, ok := recorded[p.ValueString()]
		if !ok {
			var found map[string]kubeconfig.Endpoint
			if found, ok = m.found[p.ValueString()]; ok {
				servers = clusterValues(found, field)
				recorded[p.ValueString()] = servers
			}
		}
		if !ok && m.found == nil {
			elems[p.ValueString()] = types.MapUnknown(types.StringType)
			continue
		}
		elems[p.ValueString()] = serversValue(servers, diags)
	}
	v, d := types.MapValue(previousServersType, elems)
	diags.Append(d...)
	return v
}

// serversValue is one path's entry of `previous_servers`.
func serversValue(servers map[string]string, diags *diag.Diagnostics) types.Map {
	elems := make(map[string]attr.Value, len(servers))
	for name, server := range servers {
		elems[name] = types.StringValue(server)
	}
	v, d := types.MapValue(types.StringType, elems)
	diags.Append(d...)
	return v
}

// previousServersValue is `previous_servers` holding recorded.
func previousServersValue(recorded map[string]map[string]string, diags *diag.Diagnostics) types.Map {
	elems := make(map[string]attr.Value, len(recorded))
	for p, servers := range recorded {
		elems[p] = serversValue(servers, diags)
	}
	v, d := types.MapValue(previousServersType, elems)
	diags.Append(d...)
	return v
}

// clusterValues are a field of endpoints, by cluster.
func clusterValues(endpoints map[string]kubeconfig.Endpoint, field func(kubeconfig.Endpoint) string) map[string]string {
	values := make(map[string]string, len(endpoints))
	for name, e := range endpoints {
		values[name] = field(e)
	}
	return values
}

func serverOf(e kubeconfig.Endpoint) string  { return e.Server }
func tlsNameOf(e kubeconfig.Endpoint) string { return e.TLSServerName }

// recordedValues are the known entries of a record of what the
// kubeconfigs had before kha, attribute (`previous_servers`,
// `previous_tls_server_names`).
func recordedValues(v types.Map, attribute string, diags *diag.Diagnostics) map[string]map[string]string {
	recorded := map[string]map[string]string{}
	if v.IsNull() || v.IsUnknown() {
		return recorded
	}
	for p, elem := range v.Elements() {
		entry, ok := elem.(types.Map)
		if !ok || !known(entry) {
			continue // recorded when the path is first changed
		}
		servers := map[string]string{}
		for name, server := range entry.Elements() {
			s, ok := server.(types.String)
			if !ok || !known(s) {
				diags.AddAttributeError(path.Root(attribute).AtMapKey(p), "Invalid Recorded Value",
					fmt.Sprintf("the value recorded for cluster %q is not a known string. This is always a bug in the provider.", name))
				continue
			}
			servers[name] = s.ValueString()
		}
		recorded[p] = servers
	}
	return recorded
}

// kubeconfigEdit sets the server, and with it the tls-server-name, of a
// kubeconfig's clusters.
type kubeconfigEdit struct {
	server, cluster string
	// tlsServerName is tls_server_name; "" gives each cluster the name it
	// had before kha (previousTLS).
	tlsServerName string
	// previous and previousTLS are what the clusters had before kha, by
	// cluster, for Undo; a cluster previousTLS does not hold keeps its
	// tls-server-name.
	previous, previousTLS map[string]string
	// checkTimeout bounds each check; 0 checks nothing.
	checkTimeout time.Duration
}

// tlsNameFor is the tls-server-name the edit gives a cluster that has
// current.
func (e *kubeconfigEdit) tlsNameFor(name string, current kubeconfig.Endpoint) string {
	if e.tlsServerName != "" {
		return e.tlsServerName
	}
	if before, ok := e.previousTLS[name]; ok {
		return before
	}
	return current.TLSServerName
}

// applied are the endpoints of clusters that have current with the edit made.
func (e *kubeconfigEdit) applied(current map[string]kubeconfig.Endpoint) map[string]kubeconfig.Endpoint {
	want := make(map[string]kubeconfig.Endpoint, len(current))
	for name, c := range current {
		want[name] = kubeconfig.Endpoint{Server: e.server, TLSServerName: e.tlsNameFor(name, c)}
	}
	return want
}

// undone are the endpoints of clusters that have current with the edit
// taken back: those recorded, the others as they are.
func (e *kubeconfigEdit) undone(current map[string]kubeconfig.Endpoint) map[string]kubeconfig.Endpoint {
	want := make(map[string]kubeconfig.Endpoint, len(current))
	for name, c := range current {
		if server := e.previous[name]; server != "" {
			c.Server = server
		}
		if before, ok := e.previousTLS[name]; ok {
			c.TLSServerName = before
		}
		want[name] = c
	}
	return want
}

func (e *kubeconfigEdit) Apply(current []byte) ([]byte, error) {
	endpoints, err := kubeconfig.Endpoints(current, e.cluster)
	if err != nil {
		return nil, err
	}
	return kubeconfig.SetEndpoints(current, e.applied(endpoints))
}

func (e *kubeconfigEdit) Undo(current []byte) ([]byte, error) {
	endpoints, err := kubeconfig.Endpoints(current, e.cluster)
	if err != nil {
		return nil, err
	}
	return kubeconfig.SetEndpoints(current, e.undone(endpoints))
}

// Want names the tls-server-name only when tls_server_name is set, so
// that the digest of a resource without one stays what it was.
func (e *kubeconfigEdit) Want() string {
	if e.tlsServerName != "" {
		return "server " + e.server + " and tls-server-name " + e.tlsServerName
	}
	return "server " + e.server
}

// State says the tls-server-names where the edit sets one, or where they
// are not what the edit would give them.
func (e *kubeconfigEdit) State(current []byte) (string, error) {
	endpoints, err := kubeconfig.Endpoints(current, e.cluster)
	if err != nil {
		return "", err
	}
	state := serversState(clusterValues(endpoints, serverOf))
	for name, c := range endpoints {
		if e.tlsServerName != "" || c.TLSServerName != e.tlsNameFor(name, c) {
			return state + " and " + clustersState(clusterValues(endpoints, tlsNameOf), "tls-server-name"), nil
		}
	}
	return state, nil
}

// serversState says which servers a kubeconfig's clusters have.
func serversState(servers map[string]string) string { return clustersState(servers, "server") }

// clustersState says which values of field a kubeconfig's clusters have:
// "<field> v" when they share one, "<field>s a=v, b=w" otherwise; an empty
// value is none. Names and values are the host's text (remote.OneLine).
func clustersState(values map[string]string, field string) string {
	distinct := map[string]bool{}
	var each []string
	for cluster, v := range values {
		distinct[v] = true
		v = remote.OneLine(v)
		if v == "" {
			v = "(none)"
		}
		each = append(each, remote.OneLine(cluster)+"="+v)
	}
	if len(distinct) == 1 {
		for v := range distinct {
			if v == "" {
				return "no " + field
			}
			return field + " " + remote.OneLine(v)
		}
	}
	sort.Strings(each)
	return field + "s " + strings.Join(each, ", ")
}

// wouldWorkUndone checks current with the change taken back, when the
// edit checks at all (verify) and taking it back changes current. Nothing
// restarts the recorded servers during the check (kha restarts the
// kubelet only after it): a name the node does not resolve, or a port
// nobody listens on, ends it at once.
func (e *kubeconfigEdit) wouldWorkUndone(ctx context.Context, c hostres.Host, current []byte) error {
	if e.checkTimeout == 0 {
		return nil
	}
	undone, err := e.Undo(current)
	if err != nil || bytes.Equal(undone, current) {
		return err
	}
	return kubeconfigCheck{content: undone, cluster: e.cluster, timeout: e.checkTimeout, expect: kubeconfig.Steady}.probe(ctx, c)
}

// Check is the check of a change: before the new content replaces the
// host's, and again after restart_command, when what serves the server
// may be restarting (the kubelet, a load balancer beside this change), so
// a refused connection is asked again until the timeout.
func (e *kubeconfigEdit) Check(content []byte) remote.Verifier {
	if e.checkTimeout == 0 {
		return nil
	}
	return kubeconfigCheck{content: content, cluster: e.cluster, timeout: e.checkTimeout, expect: kubeconfig.MayRestart}
}

// kubeconfigCheck probes a kubeconfig from its host, through the SSH
// connection: the files it names are read there, the server dialled
// from there.
type kubeconfigCheck struct {
	content []byte
	cluster string
	timeout time.Duration
	expect  kubeconfig.Expect
}

func (k kubeconfigCheck) Verify(ctx context.Context, c *remote.Client) error { return k.probe(ctx, c) }

// probe is Verify from any host the lifecycle hands a hook (a destroy's
// check runs in ReadHost).
func (k kubeconfigCheck) probe(ctx context.Context, h hostres.Host) error {
	ctx, cancel := context.WithTimeout(ctx, k.timeout)
	defer cancel()
	return kubeconfig.ProbeExpecting(ctx, k.expect, k.content, k.cluster, h.ReadFile, h.DialTCP)
}

// ImportState takes host:port:path, several paths separated by commas.
func (r *kubeconfigServerResource) ImportState(ctx context.Context, req resource.ImportStateRequest, resp *resource.ImportStateResponse) {
	m := kubeconfigServerModel{Verify: types.BoolValue(true), VerifyTimeout: types.StringValue("30s"), RestartCommand: types.StringUnknown()}
	rest, client := r.ImportHost(ctx, req.ID, "10.0.0.21:22:/etc/kubernetes/kubelet.conf", &m.Common, resp.Private, &resp.Diagnostics)
	if resp.Diagnostics.HasError() {
		return
	}
	var paths []types.String
	for _, p := range strings.Split(rest, ",") {
		if !hostres.FilePathPattern.MatchString(p) {
			resp.Diagnostics.AddError("Invalid Import ID", fmt.Sprintf("%q in %q is not an absolute path to a file.", p, req.ID))
			return
		}
		paths = append(paths, types.StringValue(p))
	}
	m.Paths = paths
	recorded := map[string]map[string]string{}
	server := ""
	for _, p := range paths {
		content, err := client.ReadFile(ctx, p.ValueString())
		var servers map[string]string
		if err == nil {
			servers, err = kubeconfig.Servers(content, "")
		}
		if err != nil {
			resp.Diagnostics.AddError("Importing Kubeconfig Failed", err.Error())
			return
		}
		recorded[p.ValueString()] = servers
		for _, s := range servers {
			if server != "" && s != server {
				resp.Diagnostics.AddError("Importing Kubeconfig Failed", fmt.Sprintf("the kubeconfigs' clusters have "+
					"different servers (%s and %s): import the kubeconfigs one by one, and set cluster_name", server, s))
				return
			}
			server = s
		}
	}
	m.Server = types.StringValue(server)
	m.PreviousServers = previousServersValue(recorded, &resp.Diagnostics)
	m.PreviousTLS = types.MapNull(previousServersType) // tls_server_name is not set
	out, d := m.Render(nil)
	resp.Diagnostics.Append(d...)
	m.SHA256 = types.StringValue(hostres.DesiredDigest(out.Files))
	m.RemoteSHA256 = m.SHA256
	// Destroy takes the edit back to the servers import found: what the
	// kubeconfigs had, as for a file import leaves.
	m.OnDestroy = types.StringValue(hostres.OnDestroyRestore)
	m.DestroyActions = hostres.DestroyActions(out.Files, &m.Common, func(string) (bool, bool) { return false, true }, true)
	resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
}

func (m *kubeconfigServerModel) ConflictName() string {
	return fmt.Sprintf("kha_kubeconfig_server with server = %q", m.Server.ValueString())
}

// ConflictMove: a kubeconfig's path is an element of `paths`.
func (m *kubeconfigServerModel) ConflictMove(attr string) (string, string) {
	return fmt.Sprintf("take the kubeconfig out of `paths` (`%s`) and let the other resource set its server (a kha_file "+
		"writes the whole kubeconfig, `server` included)", attr), ""
}

// PathSettings: each kubeconfig's path is an element of `paths`.
func (m *kubeconfigServerModel) PathSettings() []hostres.PathSetting {
	settings := make([]hostres.PathSetting, len(m.Paths))
	for i, p := range m.Paths {
		settings[i] = hostres.PathSetting{Attribute: path.Root("paths").AtListIndex(i), Value: p}
	}
	return settings
}

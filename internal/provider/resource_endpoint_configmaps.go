package provider

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/terraform-plugin-framework-timeouts/resource/timeouts"
	"github.com/hashicorp/terraform-plugin-framework-validators/listvalidator"
	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/booldefault"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringdefault"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-framework/types/basetypes"
	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/kha/terraform-provider-kha/internal/clusterconfig"
	"github.com/kha/terraform-provider-kha/internal/hostres"
	"github.com/kha/terraform-provider-kha/internal/kubeconfig"
)

var (
	_ resource.ResourceWithConfigure        = (*endpointConfigMapsResource)(nil)
	_ resource.ResourceWithModifyPlan       = (*endpointConfigMapsResource)(nil)
	_ resource.ResourceWithConfigValidators = (*endpointConfigMapsResource)(nil)
	_ resource.ResourceWithImportState      = (*endpointConfigMapsResource)(nil)
)

// NewEndpointConfigMapsResource is the constructor of
// kha_endpoint_configmaps.
func NewEndpointConfigMapsResource() resource.Resource {
	return &endpointConfigMapsResource{}
}

type endpointConfigMapsResource struct {
	data *hostres.ProviderData
}

type endpointConfigMapsModel struct {
	ID                   types.String   `tfsdk:"id"`
	SSH                  types.Object   `tfsdk:"ssh"`
	AdminKubeconfigPath  types.String   `tfsdk:"admin_kubeconfig_path"`
	ControlPlaneEndpoint types.String   `tfsdk:"control_plane_endpoint"`
	CertSANs             types.List     `tfsdk:"cert_sans"`
	ClusterInfoServer    types.String   `tfsdk:"cluster_info_server"`
	KubeProxyServer      types.String   `tfsdk:"kube_proxy_server"`
	RestartKubeProxy     types.Bool     `tfsdk:"restart_kube_proxy"`
	Previous             types.Object   `tfsdk:"previous"`
	TrustedHostKey       types.String   `tfsdk:"trusted_host_key"`
	Timeouts             timeouts.Value `tfsdk:"timeouts"`
}

// endpointValues are the values of the three ConfigMaps kha manages: what
// `previous` records, and what a read finds.
type endpointValues struct {
	ControlPlaneEndpoint types.String `tfsdk:"control_plane_endpoint"`
	CertSANs             types.List   `tfsdk:"cert_sans"`
	ClusterInfoServer    types.String `tfsdk:"cluster_info_server"`
	KubeProxyServer      types.String `tfsdk:"kube_proxy_server"`
}

const defaultAdminKubeconfig = "/etc/kubernetes/admin.conf"

// kubeProxyDaemonSet is the DaemonSet restart_kube_proxy rolls.
const kubeProxyDaemonSet = "kube-proxy"

// beforeConfigMapWrite, when set (by a test), runs between the read of a
// ConfigMap and its write: a change made there must be retried, never
// overwritten.
var beforeConfigMapWrite func(ref clusterconfig.Ref)

var previousAttributeTypes = map[string]attr.Type{
	"control_plane_endpoint": types.StringType,
	"cert_sans":              types.ListType{ElemType: types.StringType},
	"cluster_info_server":    types.StringType,
	"kube_proxy_server":      types.StringType,
}

func (r *endpointConfigMapsResource) Metadata(_ context.Context, req resource.MetadataRequest, resp *resource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_endpoint_configmaps"
}

func (r *endpointConfigMapsResource) Configure(_ context.Context, req resource.ConfigureRequest, resp *resource.ConfigureResponse) {
	r.data = hostres.ProviderDataFrom(req.ProviderData, &resp.Diagnostics)
}

func (r *endpointConfigMapsResource) ConfigValidators(context.Context) []resource.ConfigValidator {
	return []resource.ConfigValidator{hostres.SSHValidator{}}
}

func (r *endpointConfigMapsResource) Schema(ctx context.Context, _ resource.SchemaRequest, resp *resource.SchemaResponse) {
	resp.Schema = schema.Schema{
		MarkdownDescription: "Points the cluster's own copies of its apiserver endpoint at a new one (a new load balancer " +
			"name, a VIP), through the apiserver itself: the three ConfigMaps kubeadm writes at `kubeadm init` and " +
			"reads later.\n\n" +
			"* `kube-system/kubeadm-config`, key `ClusterConfiguration`: `controlPlaneEndpoint` (what `kubeadm join " +
			"--control-plane` and `kubeadm upgrade` use) and, with `cert_sans`, `apiServer.certSANs` (what `kubeadm init " +
			"phase certs apiserver` signs on the next control-plane node). Nothing else of the document changes, byte for " +
			"byte.\n" +
			"* `kube-public/cluster-info`, key `kubeconfig`: the `server` that `kubeadm join` discovers the cluster at. Its " +
			"`jws-kubeconfig-<token-id>` keys are signatures of that kubeconfig by the bootstrap tokens: kube-controller-manager's " +
			"bootstrap signer signs the new content again within moments. Without kube-controller-manager running (or with " +
			"its `bootstrapsigner` controller off), the join tokens' signatures stay stale and `kubeadm join` with token " +
			"discovery fails until it runs.\n" +
			"* `kube-system/kube-proxy`, key `kubeconfig.conf`: kube-proxy's `server`, with `kube_proxy_server`; then, with " +
			"`restart_kube_proxy`, a rollout restart of the `kube-proxy` DaemonSet (kube-proxy reads its kubeconfig at " +
			"start). A cluster without kube-proxy (Cilium's replacement) leaves `kube_proxy_server` unset.\n\n" +
			"kha connects to the control-plane node over SSH, reads `admin_kubeconfig_path` there into memory (never into " +
			"state, plan, logs or errors) and talks to the apiserver that kubeconfig names from the node, through the SSH " +
			"connection, verified against the kubeconfig's CA and authenticated with its client certificate or token. Each " +
			"ConfigMap is read, edited with a YAML parser (only the managed values' bytes change, and the result is decoded " +
			"again to prove it) and written back with the `resourceVersion` read, so a change made by someone else in " +
			"between is never overwritten: the edit starts again from a new read, up to " +
			strconv.Itoa(clusterconfig.ConflictRetries) + " times. Nothing is written when nothing changes.\n\n" +
			"Refresh reads the ConfigMaps, so an edit made outside Terraform (`kubectl edit`) shows in the next plan and " +
			"apply puts it back. Destroy puts back what `previous` recorded, the same way, and leaves the rest as it is.\n\n" +
			"Import with `host`, `host:port` or `host:port:/path/to/admin.conf`.",
		Attributes: map[string]schema.Attribute{
			"id": schema.StringAttribute{Computed: true, PlanModifiers: []planmodifier.String{stringplanmodifier.UseStateForUnknown()},
				MarkdownDescription: "`host:port:admin_kubeconfig_path` of the node the apiserver is reached from, as import takes it."},
			"ssh": hostres.ResourceSSHAttribute(),
			"admin_kubeconfig_path": schema.StringAttribute{Optional: true, Computed: true, Default: stringdefault.StaticString(defaultAdminKubeconfig),
				Validators: []validator.String{filePathValidator()},
				MarkdownDescription: "A kubeconfig on the node whose user may update ConfigMaps in `kube-system` and " +
					"`kube-public` (and patch the `kube-proxy` DaemonSet): kubeadm's admin kubeconfig. Its server is the " +
					"apiserver kha talks to, from the node. Client certificate and token credentials only (no exec plugins). " +
					"Default `" + defaultAdminKubeconfig + "`."},
			"control_plane_endpoint": schema.StringAttribute{Required: true, Validators: []validator.String{hostPortValidator{}},
				MarkdownDescription: "kubeadm's `controlPlaneEndpoint`, `host:port` with IPv6 literals bracketed " +
					"(`[fd00::100]:6443`): usually `kha_cluster_endpoints.<name>.kubeadm_control_plane_endpoint`."},
			"cert_sans": schema.ListAttribute{Optional: true, ElementType: types.StringType,
				Validators: []validator.List{listvalidator.UniqueValues(), listvalidator.ValueStringsAre(sanValidator{})},
				MarkdownDescription: "`apiServer.certSANs` of the ClusterConfiguration, which the next control-plane node's " +
					"certificate is signed with: usually `concat(kha_cluster_endpoints.<name>.apiserver_cert_sans.dns_names, " +
					"kha_cluster_endpoints.<name>.apiserver_cert_sans.ip_addresses)`. It changes no certificate that exists. " +
					"Unset (the default): certSANs stays as it is."},
			"cluster_info_server": schema.StringAttribute{Optional: true, Computed: true, Validators: []validator.String{serverURLValidator{}},
				MarkdownDescription: "The `server` of cluster-info's kubeconfig, where `kubeadm join` finds the cluster. " +
					"Default `https://<control_plane_endpoint>`, as kubeadm writes it."},
			"kube_proxy_server": schema.StringAttribute{Optional: true, Validators: []validator.String{serverURLValidator{}},
				MarkdownDescription: "The `server` of kube-proxy's kubeconfig: usually `kha_cluster_endpoints.<name>.kube_proxy_server`. " +
					"Unset (the default): the `kube-proxy` ConfigMap is left alone, and need not exist."},
			"restart_kube_proxy": schema.BoolAttribute{Optional: true, Computed: true, Default: booldefault.StaticBool(false),
				MarkdownDescription: "After an apply (or destroy) that changes kube-proxy's kubeconfig, restart the `kube-proxy` " +
					"DaemonSet's pods as `kubectl -n kube-system rollout restart daemonset kube-proxy` does (its pod template's " +
					"`kubectl.kubernetes.io/restartedAt` annotation), so they use the new server; the DaemonSet's update " +
					"strategy paces it. Default `false`: the pods use the new server when they next start."},
			"previous": schema.SingleNestedAttribute{Computed: true,
				MarkdownDescription: "The values found before kha first changed them, read at create (or when `cert_sans` or " +
					"`kube_proxy_server` is first set, or at import): destroy puts them back. Endpoints are not secret.",
				Attributes: map[string]schema.Attribute{
					"control_plane_endpoint": schema.StringAttribute{Computed: true,
						MarkdownDescription: "`controlPlaneEndpoint`; null when kubeadm left it out (destroy removes it then)."},
					"cert_sans": schema.ListAttribute{Computed: true, ElementType: types.StringType,
						MarkdownDescription: "`apiServer.certSANs`; null when it was absent (destroy removes it then) or `cert_sans` is unset."},
					"cluster_info_server": schema.StringAttribute{Computed: true, MarkdownDescription: "cluster-info's `server`."},
					"kube_proxy_server": schema.StringAttribute{Computed: true,
						MarkdownDescription: "kube-proxy's `server`; null while `kube_proxy_server` is unset."},
				}},
			"trusted_host_key": schema.StringAttribute{Computed: true, PlanModifiers: []planmodifier.String{stringplanmodifier.UseStateForUnknown()},
				MarkdownDescription: "With `ssh.insecure_trust_on_first_use` and no `host_key` or `known_hosts`, the host key seen " +
					"at the first connection, which every later connection must present."},
			"timeouts": timeouts.Attributes(ctx, timeouts.Opts{Create: true, Read: true, Update: true, Delete: true,
				CreateDescription: "How long creating may take, connecting and every retry included. Default `10m`.",
				ReadDescription:   "How long a refresh may take. Default `5m`.",
				UpdateDescription: "How long an update may take. Default `10m`.",
				DeleteDescription: "How long putting the previous values back may take. Default `10m`."}),
		},
	}
}

// hostPortValidator wants host:port, an IPv6 literal bracketed, as
// kubeadm's controlPlaneEndpoint and an apiserver's address.
type hostPortValidator struct{}

func (hostPortValidator) Description(context.Context) string {
	return "must be host:port, with an IPv6 address in brackets: lb.example.com:6443, 10.0.0.100:6443, [fd00::100]:6443"
}

func (v hostPortValidator) MarkdownDescription(ctx context.Context) string { return v.Description(ctx) }

func (hostPortValidator) ValidateString(_ context.Context, req validator.StringRequest, resp *validator.StringResponse) {
	if known(req.ConfigValue) {
		if err := checkHostPort(req.ConfigValue.ValueString()); err != nil {
			resp.Diagnostics.AddAttributeError(req.Path, "Invalid Address", err.Error())
		}
	}
}

func checkHostPort(s string) error {
	if strings.Contains(s, "://") {
		return fmt.Errorf("%q is a URL; controlPlaneEndpoint is host:port without a scheme, e.g. kha_cluster_endpoints' kubeadm_control_plane_endpoint", s)
	}
	if ip, err := netip.ParseAddr(s); err == nil && ip.Is6() {
		return fmt.Errorf("%q is an IPv6 address without brackets: write [<address>]:<port>, e.g. [fd00::100]:6443 "+
			"(kubeadm cannot parse a bare IPv6 endpoint)", s)
	}
	host, port, err := net.SplitHostPort(s)
	if err != nil {
		return fmt.Errorf("%q is not host:port, e.g. lb.example.com:6443 or [fd00::100]:6443", s)
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
		return fmt.Errorf("%q has an invalid port", s)
	}
	if host == "" {
		return fmt.Errorf("%q has no host", s)
	}
	if ip, err := netip.ParseAddr(host); strings.HasPrefix(s, "[") && (err != nil || !ip.Is6()) {
		return fmt.Errorf("%q: brackets are for IPv6 addresses only", s)
	}
	if _, err := netip.ParseAddr(host); err != nil && !dnsNamePattern.MatchString(host) {
		return fmt.Errorf("%q: %q is neither an IP address nor a DNS name", s, host)
	}
	return nil
}

var dnsNamePattern = regexp.MustCompile(`^(\*\.)?[A-Za-z0-9]([-A-Za-z0-9]*[A-Za-z0-9])?(\.[A-Za-z0-9]([-A-Za-z0-9]*[A-Za-z0-9])?)*\.?$`)

// sanValidator wants a certificate SAN: an IP address or a DNS name.
type sanValidator struct{}

func (sanValidator) Description(context.Context) string {
	return "must be an IP address or a DNS name"
}

func (v sanValidator) MarkdownDescription(ctx context.Context) string { return v.Description(ctx) }

func (sanValidator) ValidateString(_ context.Context, req validator.StringRequest, resp *validator.StringResponse) {
	if !known(req.ConfigValue) {
		return
	}
	s := req.ConfigValue.ValueString()
	if _, err := netip.ParseAddr(s); err != nil && !dnsNamePattern.MatchString(s) {
		resp.Diagnostics.AddAttributeError(req.Path, "Invalid Certificate SAN",
			fmt.Sprintf("%q is neither an IP address nor a DNS name: give bare names and addresses, without scheme or port, "+
				"e.g. kha_cluster_endpoints' apiserver_cert_sans.", s))
	}
}

// ModifyPlan fills cluster_info_server's default, and says which values
// `previous` will record.
func (r *endpointConfigMapsResource) ModifyPlan(ctx context.Context, req resource.ModifyPlanRequest, resp *resource.ModifyPlanResponse) {
	if req.Plan.Raw.IsNull() {
		return // destroy: previous says what comes back
	}
	var plan, config endpointConfigMapsModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	resp.Diagnostics.Append(req.Config.Get(ctx, &config)...)
	if resp.Diagnostics.HasError() {
		return
	}
	if config.ClusterInfoServer.IsNull() {
		plan.ClusterInfoServer = types.StringUnknown()
		if known(plan.ControlPlaneEndpoint) {
			plan.ClusterInfoServer = types.StringValue("https://" + plan.ControlPlaneEndpoint.ValueString())
		}
	}
	plan.Previous = types.ObjectUnknown(previousAttributeTypes)
	if !req.State.Raw.IsNull() {
		var state endpointConfigMapsModel
		resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
		if resp.Diagnostics.HasError() {
			return
		}
		if !newlyManaged(&state, &plan) {
			prev, d := previousOf(ctx, state.Previous)
			resp.Diagnostics.Append(d...)
			plan.Previous = prev.forPlan(&plan).object(&resp.Diagnostics)
		}
	}
	resp.Diagnostics.Append(resp.Plan.Set(ctx, &plan)...)
}

// newlyManaged says whether the plan manages a value the state did not:
// `previous` records it from the cluster at apply.
func newlyManaged(state, plan *endpointConfigMapsModel) bool {
	return (state.CertSANs.IsNull() && !plan.CertSANs.IsNull()) || (state.KubeProxyServer.IsNull() && !plan.KubeProxyServer.IsNull())
}

// previousOf decodes `previous`; null gives every field null.
func previousOf(ctx context.Context, obj types.Object) (endpointValues, diag.Diagnostics) {
	v := endpointValues{ControlPlaneEndpoint: types.StringNull(), CertSANs: types.ListNull(types.StringType),
		ClusterInfoServer: types.StringNull(), KubeProxyServer: types.StringNull()}
	if obj.IsNull() || obj.IsUnknown() {
		return v, nil
	}
	diags := obj.As(ctx, &v, basetypes.ObjectAsOptions{})
	return v, diags
}

// forPlan keeps what the plan manages: the values it no longer manages
// are put back by the update and forgotten.
func (v endpointValues) forPlan(plan *endpointConfigMapsModel) endpointValues {
	if plan.CertSANs.IsNull() {
		v.CertSANs = types.ListNull(types.StringType)
	}
	if plan.KubeProxyServer.IsNull() {
		v.KubeProxyServer = types.StringNull()
	}
	return v
}

func (v endpointValues) object(diags *diag.Diagnostics) types.Object {
	obj, d := types.ObjectValue(previousAttributeTypes, map[string]attr.Value{
		"control_plane_endpoint": v.ControlPlaneEndpoint, "cert_sans": v.CertSANs,
		"cluster_info_server": v.ClusterInfoServer, "kube_proxy_server": v.KubeProxyServer,
	})
	diags.Append(d...)
	return obj
}

// cluster is a connection to the apiserver from the node.
type cluster struct {
	api    *kubeconfig.APIClient
	client hostres.Host
	log    clusterconfig.Logger
}

// connect reaches the node over SSH as every host resource does
// (hostres.Reach), reads the admin kubeconfig there into memory and opens
// the apiserver it names, from the node. No cluster comes back without a
// reason in diags, which for a refresh may be a warning alone: the
// resource then keeps its state.
func (r *endpointConfigMapsResource) connect(ctx context.Context, m *endpointConfigMapsModel, to hostres.Purpose) (*cluster, diag.Diagnostics) {
	client, diags := hostres.Reach(ctx, r.data, m.SSH, &m.TrustedHostKey, to, m.ID.ValueString())
	if client == nil {
		return nil, diags
	}
	host := client.Address()
	kubeconfigPath := m.AdminKubeconfigPath.ValueString()
	tflog.Debug(ctx, "reading the admin kubeconfig on the node", map[string]any{"host": host, "path": kubeconfigPath})
	content, err := client.ReadFile(ctx, kubeconfigPath)
	if err != nil {
		diags.AddAttributeError(path.Root("admin_kubeconfig_path"), "Reading the Admin Kubeconfig Failed",
			fmt.Sprintf("%s on %s: %v. Set admin_kubeconfig_path to a kubeconfig of a cluster admin on the node (kubeadm writes "+
				"%s on control-plane nodes); with a non-root SSH user, set ssh.sudo = true to read it.", kubeconfigPath, host, err, defaultAdminKubeconfig))
		return nil, diags
	}
	api, err := kubeconfig.Connect(ctx, content, client.ReadFile, client.DialTCP)
	if err != nil {
		diags.AddAttributeError(path.Root("admin_kubeconfig_path"), "Invalid Admin Kubeconfig", fmt.Sprintf("%s on %s: %v", kubeconfigPath, host, err))
		return nil, diags
	}
	tflog.Debug(ctx, "talking to the apiserver from the node", map[string]any{"host": host, "server": api.Server})
	return &cluster{api: api, client: client, log: func(ctx context.Context, msg string, fields map[string]any) {
		fields["host"], fields["server"] = host, api.Server
		tflog.Debug(ctx, msg, fields)
	}}, diags
}

// readValues reads what the three ConfigMaps hold now. A missing
// kube-proxy ConfigMap has a null server; a missing kubeadm-config or
// cluster-info reads as "" (drift, which the apply then reports). Where
// controlPlaneEndpoint is absent, as kubeadm leaves it without one, its
// value is "" and endpointAbsent is set.
func (c *cluster) readValues(ctx context.Context) (v endpointValues, endpointAbsent bool, err error) {
	v = endpointValues{CertSANs: types.ListNull(types.StringType), KubeProxyServer: types.StringNull(),
		ControlPlaneEndpoint: types.StringValue(""), ClusterInfoServer: types.StringValue("")}
	content, err := clusterconfig.Get(ctx, c.api, clusterconfig.KubeadmConfig, c.log)
	switch {
	case errors.Is(err, clusterconfig.ErrNotFound):
	case err != nil:
		return v, false, err
	default:
		cc, err := clusterconfig.ReadClusterConfiguration(content)
		if err != nil {
			return v, false, fmt.Errorf("ConfigMap %s: %w", clusterconfig.KubeadmConfig, err)
		}
		v.ControlPlaneEndpoint, endpointAbsent = types.StringValue(cc.ControlPlaneEndpoint), !cc.HasControlPlaneEndpoint
		if cc.CertSANs != nil {
			v.CertSANs = stringList(cc.CertSANs)
		}
	}
	for _, each := range []struct {
		ref clusterconfig.Ref
		to  *types.String
	}{{clusterconfig.ClusterInfo, &v.ClusterInfoServer}, {clusterconfig.KubeProxy, &v.KubeProxyServer}} {
		content, err := clusterconfig.Get(ctx, c.api, each.ref, c.log)
		if errors.Is(err, clusterconfig.ErrNotFound) {
			continue
		}
		if err != nil {
			return v, false, err
		}
		server, err := clusterconfig.KubeconfigServer(content)
		if err != nil {
			return v, false, fmt.Errorf("ConfigMap %s, key %s: %w", each.ref, each.ref.Key, err)
		}
		*each.to = types.StringValue(server)
	}
	return v, endpointAbsent, nil
}

// asPrevious is what `previous` records of values read: an absent
// controlPlaneEndpoint is null, which destroy removes again.
func (v endpointValues) asPrevious(endpointAbsent bool) endpointValues {
	if endpointAbsent {
		v.ControlPlaneEndpoint = types.StringNull()
	}
	return v
}

// edit runs one ConfigMap edit, calling the test hook between read and
// write.
func (c *cluster) edit(ctx context.Context, ref clusterconfig.Ref, f func(string) (string, error)) (bool, error) {
	return clusterconfig.Edit(ctx, c.api, ref, func(current string) (string, error) {
		if beforeConfigMapWrite != nil {
			beforeConfigMapWrite(ref)
		}
		return f(current)
	}, c.log)
}

// target is what the ConfigMaps should hold after an operation; a null
// value leaves its field alone, and removeEndpoint and removeSANs remove
// theirs.
type target struct {
	endpoint, clusterInfo, kubeProxy types.String
	sans                             types.List
	removeEndpoint, removeSANs       bool
	restartKubeProxy                 bool
}

// put edits the ConfigMaps to t. A missing kube-proxy ConfigMap is an
// error only when t sets its server.
func (c *cluster) put(ctx context.Context, t target, diags *diag.Diagnostics) {
	if !t.endpoint.IsNull() || t.removeEndpoint || !t.sans.IsNull() || t.removeSANs {
		_, err := c.edit(ctx, clusterconfig.KubeadmConfig, func(current string) (string, error) {
			out := []byte(current)
			var err error
			switch {
			case !t.endpoint.IsNull():
				out, err = clusterconfig.SetControlPlaneEndpoint(out, t.endpoint.ValueString())
			case t.removeEndpoint:
				out, err = clusterconfig.RemoveControlPlaneEndpoint(out)
			}
			switch {
			case err != nil:
			case !t.sans.IsNull():
				out, err = clusterconfig.SetCertSANs(out, listStrings(t.sans))
			case t.removeSANs:
				out, err = clusterconfig.RemoveCertSANs(out)
			}
			return string(out), err
		})
		if err != nil {
			diags.AddAttributeError(path.Root("control_plane_endpoint"), "Updating kubeadm-config Failed", configMapHint(err, "kubeadm init"))
			return
		}
	}
	if !t.clusterInfo.IsNull() {
		_, err := c.edit(ctx, clusterconfig.ClusterInfo, func(current string) (string, error) {
			return clusterconfig.SetKubeconfigServer(current, t.clusterInfo.ValueString())
		})
		if err != nil {
			diags.AddAttributeError(path.Root("cluster_info_server"), "Updating cluster-info Failed", configMapHint(err, "kubeadm init phase bootstrap-token"))
			return
		}
	}
	if t.kubeProxy.IsNull() {
		return
	}
	changed, err := c.edit(ctx, clusterconfig.KubeProxy, func(current string) (string, error) {
		return clusterconfig.SetKubeconfigServer(current, t.kubeProxy.ValueString())
	})
	if errors.Is(err, clusterconfig.ErrNotFound) {
		diags.AddAttributeError(path.Root("kube_proxy_server"), "No kube-proxy ConfigMap",
			err.Error()+": the cluster runs no kube-proxy (Cilium's replacement, say). Remove kube_proxy_server.")
		return
	}
	if err != nil {
		diags.AddAttributeError(path.Root("kube_proxy_server"), "Updating kube-proxy Failed", err.Error())
		return
	}
	if changed && t.restartKubeProxy {
		if err := clusterconfig.RestartDaemonSet(ctx, c.api, clusterconfig.KubeProxy.Namespace, kubeProxyDaemonSet, time.Now(), c.log); err != nil {
			diags.AddAttributeError(path.Root("restart_kube_proxy"), "Restarting kube-proxy Failed",
				err.Error()+". The ConfigMap has the new server; restart kube-proxy's pods by hand, or set restart_kube_proxy = false.")
		}
	}
}

// configMapHint adds what a missing ConfigMap means.
func configMapHint(err error, writer string) string {
	if errors.Is(err, clusterconfig.ErrNotFound) {
		return err.Error() + ": " + writer + " writes it; is admin_kubeconfig_path's server the right cluster, and has kubeadm init finished?"
	}
	return err.Error()
}

func listStrings(l types.List) []string {
	var out []string
	for _, e := range l.Elements() {
		if s, ok := e.(types.String); ok {
			out = append(out, s.ValueString())
		}
	}
	return out
}

func (r *endpointConfigMapsResource) Create(ctx context.Context, req resource.CreateRequest, resp *resource.CreateResponse) {
	var plan endpointConfigMapsModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	if resp.Diagnostics.HasError() {
		return
	}
	timeout, d := plan.Timeouts.Create(ctx, hostres.DefaultApplyTimeout)
	resp.Diagnostics.Append(d...)
	r.apply(ctx, timeout, &plan, nil, resp.State.Set, &resp.Diagnostics)
}

func (r *endpointConfigMapsResource) Update(ctx context.Context, req resource.UpdateRequest, resp *resource.UpdateResponse) {
	var plan, state endpointConfigMapsModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	if resp.Diagnostics.HasError() {
		return
	}
	timeout, d := plan.Timeouts.Update(ctx, hostres.DefaultApplyTimeout)
	resp.Diagnostics.Append(d...)
	r.apply(ctx, timeout, &plan, &state, resp.State.Set, &resp.Diagnostics)
}

// apply records `previous` from the cluster for the values managed from
// now on, then edits the ConfigMaps to the plan; values the prior state
// managed and the plan does not get their previous values back. The
// state is saved once previous is recorded, even when an edit then fails,
// so that destroy can put back what was changed.
func (r *endpointConfigMapsResource) apply(ctx context.Context, timeout time.Duration, plan, prior *endpointConfigMapsModel,
	save func(context.Context, any) diag.Diagnostics, diags *diag.Diagnostics) {
	if diags.HasError() {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if prior != nil {
		plan.TrustedHostKey = prior.TrustedHostKey
	}
	c, d := r.connect(ctx, plan, hostres.ToChange)
	if diags.Append(d...); c == nil {
		return
	}
	defer c.api.Close()
	live, endpointAbsent, err := c.readValues(ctx)
	if err != nil {
		diags.AddError("Reading the Endpoint ConfigMaps Failed", err.Error())
		return
	}
	previous := live.asPrevious(endpointAbsent)
	var priorPrevious endpointValues
	if prior != nil {
		priorPrevious, d = previousOf(ctx, prior.Previous)
		diags.Append(d...)
		previous = priorPrevious
		if prior.CertSANs.IsNull() {
			previous.CertSANs = live.CertSANs
		}
		if prior.KubeProxyServer.IsNull() {
			previous.KubeProxyServer = live.KubeProxyServer
		}
	}
	plan.Previous = previous.forPlan(plan).object(diags)
	plan.ID = types.StringValue(c.client.Address() + ":" + plan.AdminKubeconfigPath.ValueString())
	if diags.HasError() {
		return
	}
	t := target{endpoint: plan.ControlPlaneEndpoint, clusterInfo: plan.ClusterInfoServer, kubeProxy: plan.KubeProxyServer,
		sans: plan.CertSANs, restartKubeProxy: plan.RestartKubeProxy.ValueBool()}
	if prior != nil && plan.CertSANs.IsNull() && !prior.CertSANs.IsNull() {
		// No longer managed: back to what was there.
		t.sans, t.removeSANs = priorPrevious.CertSANs, priorPrevious.CertSANs.IsNull()
	}
	if prior != nil && plan.KubeProxyServer.IsNull() && !prior.KubeProxyServer.IsNull() {
		t.kubeProxy = priorPrevious.KubeProxyServer
	}
	var putDiags diag.Diagnostics
	c.put(ctx, t, &putDiags)
	diags.Append(putDiags...)
	diags.Append(save(ctx, plan)...)
}

func (r *endpointConfigMapsResource) Read(ctx context.Context, req resource.ReadRequest, resp *resource.ReadResponse) {
	var state endpointConfigMapsModel
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	timeout, d := state.Timeouts.Read(ctx, hostres.DefaultReadTimeout)
	resp.Diagnostics.Append(d...)
	if resp.Diagnostics.HasError() {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	c, d := r.connect(ctx, &state, hostres.ToRead)
	if resp.Diagnostics.Append(d...); c == nil {
		return // the state stays as it was
	}
	defer c.api.Close()
	live, _, err := c.readValues(ctx)
	if err != nil && nothingAnswers(err) {
		resp.Diagnostics.AddAttributeWarning(path.Root("admin_kubeconfig_path"), "Apiserver Unreachable: "+c.api.Server,
			fmt.Sprintf("The ConfigMaps were not read: the apiserver did not answer from %s (%v).\n\nThe resource keeps its "+
				"prior state: no change in the cluster is assumed. A change to this resource fails until the apiserver answers.",
				c.client.Address(), err))
		return
	}
	if err != nil {
		resp.Diagnostics.AddError("Reading the Endpoint ConfigMaps Failed", err.Error())
		return
	}
	state.ControlPlaneEndpoint, state.ClusterInfoServer = live.ControlPlaneEndpoint, live.ClusterInfoServer
	if !state.CertSANs.IsNull() {
		state.CertSANs = live.CertSANs
		if live.CertSANs.IsNull() {
			state.CertSANs = stringList([]string{}) // removed by hand: drift
		}
	}
	if !state.KubeProxyServer.IsNull() {
		state.KubeProxyServer = live.KubeProxyServer
		if live.KubeProxyServer.IsNull() {
			state.KubeProxyServer = types.StringValue("") // deleted: drift, and apply says why
		}
	}
	resp.Diagnostics.Append(resp.State.Set(ctx, &state)...)
}

// Delete puts back what `previous` recorded.
func (r *endpointConfigMapsResource) Delete(ctx context.Context, req resource.DeleteRequest, resp *resource.DeleteResponse) {
	var state endpointConfigMapsModel
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	timeout, d := state.Timeouts.Delete(ctx, hostres.DefaultApplyTimeout)
	resp.Diagnostics.Append(d...)
	if resp.Diagnostics.HasError() {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	prev, d := previousOf(ctx, state.Previous)
	resp.Diagnostics.Append(d...)
	if resp.Diagnostics.HasError() {
		return
	}
	c, d := r.connect(ctx, &state, hostres.ToChange)
	if resp.Diagnostics.Append(d...); c == nil {
		for i, e := range resp.Diagnostics {
			if e.Summary() == "SSH Connection Failed" {
				resp.Diagnostics[i] = diag.NewAttributeErrorDiagnostic(path.Root("ssh"), e.Summary(), e.Detail()+
					"\n\nDestroy puts the previous endpoint values back through this node. If the cluster is gone for good, "+
					"remove the resource from the state with `terraform state rm`.")
			}
		}
		return
	}
	defer c.api.Close()
	t := target{endpoint: prev.ControlPlaneEndpoint, removeEndpoint: prev.ControlPlaneEndpoint.IsNull(), clusterInfo: prev.ClusterInfoServer,
		restartKubeProxy: state.RestartKubeProxy.ValueBool()}
	if !state.CertSANs.IsNull() {
		t.sans, t.removeSANs = prev.CertSANs, prev.CertSANs.IsNull()
	}
	if !state.KubeProxyServer.IsNull() {
		t.kubeProxy = prev.KubeProxyServer
	}
	tflog.Debug(ctx, "putting the previous endpoint values back", map[string]any{"host": c.client.Address()})
	c.put(ctx, t, &resp.Diagnostics)
}

// ImportState takes host, host:port or host:port:/path/to/admin.conf.
func (r *endpointConfigMapsResource) ImportState(ctx context.Context, req resource.ImportStateRequest, resp *resource.ImportStateResponse) {
	address, kubeconfigPath := req.ID, defaultAdminKubeconfig
	if i := strings.Index(req.ID, ":/"); i >= 0 {
		address, kubeconfigPath = req.ID[:i], req.ID[i+1:]
	}
	host, port := address, types.Int64Null()
	if h, p, err := net.SplitHostPort(address); err == nil {
		n, err := strconv.Atoi(p)
		if err != nil || n < 1 || n > 65535 {
			resp.Diagnostics.AddError("Invalid Import ID", fmt.Sprintf("%q has an invalid port; use host, host:port or host:port:/etc/kubernetes/admin.conf.", req.ID))
			return
		}
		host, port = h, types.Int64Value(int64(n))
	}
	if host == "" || strings.ContainsAny(host, "/ ") || !hostres.FilePathPattern.MatchString(kubeconfigPath) {
		resp.Diagnostics.AddError("Invalid Import ID", fmt.Sprintf("%q is not host, host:port or host:port:/path/to/admin.conf, "+
			"e.g. 10.0.0.11:22:/etc/kubernetes/admin.conf.", req.ID))
		return
	}
	sshObj, d := r.data.ImportedSSH(ctx, host, port)
	resp.Diagnostics.Append(d...)
	var schemaResp resource.SchemaResponse
	r.Schema(ctx, resource.SchemaRequest{}, &schemaResp)
	m := endpointConfigMapsModel{SSH: sshObj, AdminKubeconfigPath: types.StringValue(kubeconfigPath), RestartKubeProxy: types.BoolValue(false),
		TrustedHostKey: types.StringUnknown(), Timeouts: timeouts.Value{Object: types.ObjectNull(attributeTypes(schemaResp.Schema.Attributes["timeouts"]))}}
	if resp.Diagnostics.HasError() {
		return
	}
	c, d := r.connect(ctx, &m, hostres.ToImport)
	if resp.Diagnostics.Append(d...); c == nil {
		return
	}
	defer c.api.Close()
	live, endpointAbsent, err := c.readValues(ctx)
	if err != nil {
		resp.Diagnostics.AddError("Importing the Endpoint ConfigMaps Failed", err.Error())
		return
	}
	m.ID = types.StringValue(c.client.Address() + ":" + kubeconfigPath)
	m.ControlPlaneEndpoint, m.ClusterInfoServer, m.CertSANs, m.KubeProxyServer = live.ControlPlaneEndpoint, live.ClusterInfoServer, live.CertSANs, live.KubeProxyServer
	// Destroy puts back what import found.
	m.Previous = live.asPrevious(endpointAbsent).object(&resp.Diagnostics)
	resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
}

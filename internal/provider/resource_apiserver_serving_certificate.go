package provider

import (
	"bytes"
	"context"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"net/url"
	"path/filepath"
	"time"

	"github.com/hashicorp/terraform-plugin-framework-validators/listvalidator"
	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/booldefault"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/objectplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringdefault"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-framework/types/basetypes"

	"github.com/kha/terraform-provider-kha/internal/certissue"
	"github.com/kha/terraform-provider-kha/internal/hostres"
	"github.com/kha/terraform-provider-kha/internal/remote"
)

var (
	_ resource.ResourceWithConfigure        = (*apiserverServingCertificateResource)(nil)
	_ resource.ResourceWithModifyPlan       = (*apiserverServingCertificateResource)(nil)
	_ resource.ResourceWithConfigValidators = (*apiserverServingCertificateResource)(nil)
	_ resource.ResourceWithImportState      = (*apiserverServingCertificateResource)(nil)
)

// NewAPIServerServingCertificateResource is the constructor of
// kha_apiserver_serving_certificate.
func NewAPIServerServingCertificateResource() resource.Resource {
	return &apiserverServingCertificateResource{hostres.Resource[servingCertificateModel, *servingCertificateModel]{Name: "apiserver_serving_certificate"}}
}

type apiserverServingCertificateResource struct {
	hostres.Resource[servingCertificateModel, *servingCertificateModel]
}

// The lifecycle's optional hooks the model implements (internal/hostres/hooks.go).
var (
	_ hostres.DestroyLeaver                          = (*servingCertificateModel)(nil)
	_ hostres.HostWatcher                            = (*servingCertificateModel)(nil)
	_ hostres.AppliedWatcher                         = (*servingCertificateModel)(nil)
	_ hostres.ChangeChecker[servingCertificateModel] = (*servingCertificateModel)(nil)
)

type servingCertificateModel struct {
	hostres.Common
	SANs              *sansModel     `tfsdk:"sans"`
	KeepLiveSANs      types.Bool     `tfsdk:"keep_live_sans"`
	CertificatePath   types.String   `tfsdk:"certificate_path"`
	KeyPath           types.String   `tfsdk:"key_path"`
	CACertificatePath types.String   `tfsdk:"ca_certificate_path"`
	CAKeyPath         types.String   `tfsdk:"ca_key_path"`
	KeyAlgorithm      types.String   `tfsdk:"key_algorithm"`
	Validity          types.String   `tfsdk:"validity"`
	RenewBefore       types.String   `tfsdk:"renew_before"`
	APIServerAddress  types.String   `tfsdk:"apiserver_address"`
	Verify            types.Bool     `tfsdk:"verify"`
	VerifyEndpoints   []types.String `tfsdk:"verify_endpoints"`
	ServingTimeout    types.String   `tfsdk:"serving_timeout"`
	VerifyTimeout     types.String   `tfsdk:"verify_timeout"`
	ReloadCommand     types.String   `tfsdk:"reload_command"`
	NotBefore         types.String   `tfsdk:"not_before"`
	NotAfter          types.String   `tfsdk:"not_after"`
	CANotAfter        types.String   `tfsdk:"ca_not_after"`
	LiveSANs          types.Object   `tfsdk:"live_sans"`
}

// sansModel is kha_cluster_endpoints' apiserver_cert_sans, and live_sans.
type sansModel struct {
	DNSNames    []types.String `tfsdk:"dns_names"`
	IPAddresses []types.String `tfsdk:"ip_addresses"`
}

var sansAttrTypes = map[string]attr.Type{"dns_names": types.ListType{ElemType: types.StringType},
	"ip_addresses": types.ListType{ElemType: types.StringType}}

// liveSANsValue is live_sans for the SANs of a node's certificate.
func liveSANsValue(s certissue.SANs) types.Object {
	v, _ := types.ObjectValueFrom(context.Background(), sansAttrTypes, sansModel{DNSNames: typedStrings(s.DNSNames), IPAddresses: typedStrings(s.IPAddresses)})
	return v
}

// lastSeen are the SANs live_sans recorded, nil where it has none.
func (m *servingCertificateModel) lastSeen() *certissue.SANs {
	if !known(m.LiveSANs) {
		return nil
	}
	var live sansModel
	if m.LiveSANs.As(context.Background(), &live, basetypes.ObjectAsOptions{}).HasError() {
		return nil
	}
	return &certissue.SANs{DNSNames: stringValues(live.DNSNames), IPAddresses: stringValues(live.IPAddresses)}
}

func (m *servingCertificateModel) Fields() *hostres.Common { return &m.Common }

// LeavesOnDestroy: clients rely on the certificate it issued.
func (m *servingCertificateModel) LeavesOnDestroy() {}

// kubeadm's paths.
const (
	kubeadmPKI = "/etc/kubernetes/pki/"
)

func (r *apiserverServingCertificateResource) Schema(ctx context.Context, _ resource.SchemaRequest, resp *resource.SchemaResponse) {
	sanList := func(what string) schema.ListAttribute {
		return schema.ListAttribute{Required: true, ElementType: types.StringType, MarkdownDescription: what}
	}
	pathAttr := func(def, what string) schema.StringAttribute {
		return schema.StringAttribute{Optional: true, Computed: true, Default: stringdefault.StaticString(def),
			Validators: []validator.String{managedPathValidator()}, MarkdownDescription: what + " Default `" + def + "`."}
	}
	attrs := map[string]schema.Attribute{
		"sans": schema.SingleNestedAttribute{
			Required: true,
			MarkdownDescription: "The SANs the certificate must have: `kha_cluster_endpoints.<name>.apiserver_cert_sans` as it is, so " +
				"that every endpoint of the plan verifies. With this resource re-issuing the certificates, leave " +
				"`kha_cluster_endpoints`' `existing_cert_sans` unset (its check against the live certificate would refuse the " +
				"very change this resource makes), and give the load balancer and kubeconfig resources `depends_on` this " +
				"one: Terraform then re-issues the certificates before any client is pointed at a new name.",
			Attributes: map[string]schema.Attribute{
				"dns_names":    sanList("DNS SANs."),
				"ip_addresses": sanList("IP SANs."),
			},
		},
		"keep_live_sans": schema.BoolAttribute{Optional: true, Computed: true, Default: booldefault.StaticBool(true),
			MarkdownDescription: "Issue the certificate with the SANs of the certificate on the node too (kubeadm adds the " +
				"node's host name, the advertise address and the `kubernetes` Service's names), so that no name a client " +
				"uses today stops verifying. The live certificate's DNS names go through the check `sans` does: one that " +
				"is not a DNS name (a `,`, a blank, a newline, which openssl's configuration would read as more) is left " +
				"out, with a warning in the provider's log. With `false` the certificate has `sans` alone, and a certificate " +
				"with more is drift. Default `true`."},
		"certificate_path":    pathAttr(kubeadmPKI+"apiserver.crt", "The serving certificate, as kube-apiserver's `--tls-cert-file` names it."),
		"key_path":            pathAttr(kubeadmPKI+"apiserver.key", "Its key (`--tls-private-key-file`), in the certificate's directory."),
		"ca_certificate_path": pathAttr(kubeadmPKI+"ca.crt", "The cluster CA's certificate, which clients verify the apiserver against."),
		"ca_key_path": pathAttr(kubeadmPKI+"ca.key", "The cluster CA's key, which signs the certificate on the node: it is "+
			"read by `openssl` there and never leaves the host."),
		"key_algorithm": schema.StringAttribute{Optional: true,
			Validators: []validator.String{stringvalidator.OneOf(certissue.Algorithms...)},
			MarkdownDescription: "The new key's algorithm, by kubeadm's names (`encryptionAlgorithm`). Default: the " +
				"algorithm of the certificate on the node, else `RSA-2048`, as kubeadm."},
		"validity": schema.StringAttribute{Optional: true, Validators: []validator.String{durationValidator()},
			MarkdownDescription: "How long the new certificate is valid, in whole days (e.g. `8760h`). Default: as long as " +
				"the certificate on the node was (kubeadm's `certificateValidityPeriod`), else one year; never past the CA's end."},
		"renew_before": schema.StringAttribute{Optional: true, Validators: []validator.String{durationValidator()},
			MarkdownDescription: "Re-issue a certificate that ends within this long (e.g. `720h`): the refresh that finds " +
				"one plans the re-issue with a warning, `Certificate Due for Renewal`, that gives its end and the time left (a " +
				"renewal is no change made outside Terraform, so no drift warning), and the apply renews the nodes " +
				"one at a time, each proven as for a SAN change. `0s` renews only what has expired, and then the plan warns when " +
				"a certificate ends within 30 days. The plan also warns when the cluster CA ends within the window (or 30 " +
				"days), since no certificate kha issues can outlast it. Unlike kubespray's `auto_renew_certificates`, a " +
				"monthly timer on every control-plane node that renews all of kubeadm's certificates at once whatever their " +
				"age and restarts the control plane, kha renews the serving certificate only when it is due, node by node, " +
				"seen in a plan. Must be shorter than `validity`. Default: 30 days, or a third of the certificate's validity when that is " +
				"shorter (as cert-manager's default), so that short-lived certificates are not renewed as soon as they are issued."},
		"not_after": schema.StringAttribute{Computed: true,
			MarkdownDescription: "When the certificate on the node ends (RFC 3339, UTC), read at every refresh and after " +
				"every apply: for outputs and monitoring (`timecmp(kha_apiserver_serving_certificate.cp[\"cp1\"].not_after, " +
				"timeadd(plantimestamp(), \"720h\")) < 0`). Known after apply where the plan re-issues the certificate: " +
				"where the node's lacks what `sans` asks, and where it is due under the planned `renew_before`, which the " +
				"plan says in a warning (`Certificate Due for Renewal`). Null when the node has none."},
		"live_sans": schema.SingleNestedAttribute{Computed: true,
			PlanModifiers: []planmodifier.Object{objectplanmodifier.UseStateForUnknown()},
			MarkdownDescription: "The SANs of the certificate on the node, read with `not_after`: `sans` and, with " +
				"`keep_live_sans`, the names kubeadm added. With `keep_live_sans` they are part of what the certificate " +
				"must have, so a change to `sans` that the node's certificate already covers (a name dropped) plans no " +
				"re-issue and leaves `sha256` and `remote_sha256` as they are: the apply issues nothing for it. Known " +
				"after apply where the plan re-issues the certificate; null after a create until the next refresh, and " +
				"when the node has none.",
			Attributes: map[string]schema.Attribute{
				"dns_names":    schema.ListAttribute{Computed: true, ElementType: types.StringType, MarkdownDescription: "DNS SANs."},
				"ip_addresses": schema.ListAttribute{Computed: true, ElementType: types.StringType, MarkdownDescription: "IP SANs."},
			}},
		"not_before": schema.StringAttribute{Computed: true,
			MarkdownDescription: "When the certificate on the node started (RFC 3339, UTC), read with `not_after`: the " +
				"default `renew_before` is a third of the span between them when that is shorter than 30 days."},
		"ca_not_after": schema.StringAttribute{Computed: true,
			MarkdownDescription: "When the cluster CA at `ca_certificate_path` ends (RFC 3339, UTC), read with `not_after`. " +
				"No certificate kha issues outlasts it: a certificate that ends within its window while the CA does too is " +
				"the CA's to renew, and the plan says so rather than planning a re-issue."},
		"apiserver_address": schema.StringAttribute{Optional: true, Computed: true, Default: stringdefault.StaticString("127.0.0.1:6443"),
			Validators: []validator.String{hostPortValidator{}},
			MarkdownDescription: "Where the node's kube-apiserver listens, as seen from the node (reached through the SSH " +
				"connection). After the swap kha waits until it serves the new certificate. Default `127.0.0.1:6443`."},
		"verify": schema.BoolAttribute{Optional: true, Computed: true, Default: booldefault.StaticBool(true),
			MarkdownDescription: "Prove the new certificate before keeping it: served at `apiserver_address`, and verified " +
				"through `verify_endpoints`; both are reached from the node through the SSH connection, which needs TCP " +
				"forwarding allowed. With `false` the new pair stays once in place and `reload_command` succeeded. Default `true`."},
		"verify_endpoints": schema.ListAttribute{Optional: true, ElementType: types.StringType,
			Validators: []validator.List{listvalidator.UniqueValues(), listvalidator.ValueStringsAre(serverURLValidator{})},
			MarkdownDescription: "Every other endpoint that reaches this node's apiserver, as its clients name it: the node's " +
				"address, the node-local load balancer (`https://localhost:6443`), the VIP by address and by name. Each is " +
				"dialled from the node until a handshake lands on this node's apiserver (the one that presents the new " +
				"certificate), which must then verify against the cluster CA for the endpoint's host, as clients verify it; " +
				"handshakes that land on another node's apiserver are skipped. If an endpoint never reaches this node within " +
				"`verify_timeout`, or does not verify, the previous certificate goes back."},
		"serving_timeout": schema.StringAttribute{Optional: true, Computed: true, Default: stringdefault.StaticString("90s"),
			Validators: []validator.String{durationValidator()},
			MarkdownDescription: "How long the apiserver may take to serve the new certificate. kube-apiserver reloads its " +
				"serving certificate from disk when the file changes (within a minute at worst); one that does not needs " +
				"`reload_command`. Default `90s`."},
		"verify_timeout": schema.StringAttribute{Optional: true, Computed: true, Default: stringdefault.StaticString("30s"),
			Validators:          []validator.String{durationValidator()},
			MarkdownDescription: "How long each of `verify_endpoints` may take to reach this node's apiserver. Default `30s`."},
		"reload_command": schema.StringAttribute{Optional: true, Computed: true, Default: stringdefault.StaticString(""),
			MarkdownDescription: "Run after the swap, and after a rollback: empty for kube-apiserver, which reloads the " +
				"certificate by itself; a restart (`crictl stop $(crictl ps -q --name kube-apiserver)`) for one that does not."},
	}
	attrs = hostres.WithHostAttributes(ctx, attrs, "`host:port:path` of the certificate.",
		"Digest of what the certificate must have (its SANs and CA); `remote_sha256` is the digest of what the node's has.")
	attrs["on_destroy"] = schema.StringAttribute{Optional: true, Computed: true,
		Validators: []validator.String{stringvalidator.OneOf(hostres.OnDestroyKeep)},
		MarkdownDescription: "Always `keep`: destroy leaves the certificate in place, since clients rely on the names it " +
			"has, and does not contact the node; the pair it last replaced stays next to it (`.apiserver.crt.kha.previous/`), and " +
			"after a second change the pair found before kha (kubeadm's) in `.apiserver.crt.kha.original/`."}
	resp.Schema = schema.Schema{
		MarkdownDescription: "Re-issues a control-plane node's apiserver serving certificate with the plan's SANs, on the " +
			"node, and proves it served before it keeps it: the x509 SAN trap (a new load balancer name that the " +
			"certificate lacks) becomes one plan.\n\n" +
			"When the certificate on the node lacks a SAN of `sans` (or is not signed by the CA, or ends within `renew_before`), apply " +
			"makes a new key and certificate on the node with `openssl`, signed by the cluster CA's key where it lies " +
			"(`/etc/kubernetes/pki/ca.key`; it never leaves the host, and the new key never reaches state, plan or logs), " +
			"with the subject, key algorithm and validity of the certificate it replaces (kubeadm's: `CN=kube-apiserver`, " +
			"RSA-2048, one year), key usage and `serverAuth` as kubeadm sets them. It checks the new certificate (SANs, " +
			"chain to the CA) before anything changes, keeps hard links of the previous pair, renames key and certificate " +
			"into place with their mode and owner, runs `reload_command`, waits until the apiserver serves the new " +
			"certificate and verifies it through `verify_endpoints`. Any failure puts the previous pair back, and kha " +
			"waits until the apiserver serves it again. If the connection is lost after the swap, the node puts the " +
			"previous pair back by itself once no verdict came in time. A kept change leaves the previous pair in " +
			"`.apiserver.crt.kha.previous/` next to the certificate, for a rollback by hand; the next change moves that pair, " +
			"the one found before kha (kubeadm's), to `.apiserver.crt.kha.original/`, which no later change replaces.\n\n" +
			"Nodes go **one at a time**: certificates signed by one CA (one cluster) change one after another in a run " +
			"whatever Terraform's `-parallelism`, each proven before the next starts, and after a failure no other node " +
			"of the cluster changes in that run. Unlike kubespray and kubeadm, which regenerate certificates on every " +
			"node at once and leave verification to the operator, kha never has two apiservers without a proven " +
			"certificate.\n\n" +
			"Refresh reads the certificate (never the key) and reports drift when it no longer has what `sans` asks. " +
			"Destroy leaves the certificate in place without contacting the node. Import with `host:port:path` of the " +
			"certificate.",
		Attributes: attrs,
	}
}

// WatchHost reads the validity of the certificate on the node, and its
// CA's end, at every refresh.
func (m *servingCertificateModel) WatchHost(ctx context.Context, c hostres.Host, _ string) diag.Diagnostics {
	m.readValidity(ctx, c)
	// What the certificate must have includes the SANs it keeps, as read
	// now: the refresh's digest of the host says the same.
	if out, d := m.Render(m); !d.HasError() {
		m.SHA256 = types.StringValue(hostres.DesiredDigest(out.Files))
	}
	return nil
}

// WatchApplied reads the validity of the certificate the apply left, where
// the plan did not know it.
func (m *servingCertificateModel) WatchApplied(ctx context.Context, c hostres.Host) diag.Diagnostics {
	liveSANs := m.LiveSANs // null after a create (CheckChange)
	switch {
	case !m.NotAfter.IsUnknown() && !m.NotBefore.IsUnknown() && !m.CANotAfter.IsUnknown() && !m.LiveSANs.IsUnknown():
	case c == nil:
		m.NotBefore, m.NotAfter, m.CANotAfter = types.StringNull(), types.StringNull(), types.StringNull()
		m.LiveSANs = types.ObjectNull(sansAttrTypes)
	default:
		m.readValidity(ctx, c)
	}
	if !liveSANs.IsUnknown() {
		m.LiveSANs = liveSANs
	}
	return nil
}

// readValidity sets not_before, not_after, live_sans and ca_not_after
// from the node: null where a certificate is missing or does not parse
// (the refresh's drift says why).
func (m *servingCertificateModel) readValidity(ctx context.Context, c hostres.Host) {
	read := func(path types.String) *x509.Certificate {
		text, err := c.ReadFile(ctx, path.ValueString())
		if err != nil {
			return nil
		}
		cert, _ := certissue.ParsePEM(text)
		return cert
	}
	m.NotBefore, m.NotAfter, m.CANotAfter = types.StringNull(), types.StringNull(), types.StringNull()
	m.LiveSANs = types.ObjectNull(sansAttrTypes)
	if cert := read(m.CertificatePath); cert != nil {
		m.NotBefore, m.NotAfter = rfc3339(cert.NotBefore), rfc3339(cert.NotAfter)
		m.LiveSANs = liveSANsValue(certissue.SANsOf(cert))
	}
	if ca := read(m.CACertificatePath); ca != nil {
		m.CANotAfter = rfc3339(ca.NotAfter)
	}
}

func rfc3339(t time.Time) types.String { return types.StringValue(t.UTC().Format(time.RFC3339)) }

// CheckChange plans the validity: unknown where the apply re-issues the
// certificate (the node's lacks what the plan wants, or is due for
// renewal under the planned renew_before, which a warning says), else
// what the refresh read.
func (m *servingCertificateModel) CheckChange(prior *servingCertificateModel) diag.Diagnostics {
	var diags diag.Diagnostics
	out, d := m.Render(m) // with the live SANs the state kept, as the plan's digest
	m.NotBefore, m.NotAfter, m.CANotAfter = types.StringUnknown(), types.StringUnknown(), types.StringUnknown()
	m.LiveSANs = types.ObjectUnknown(sansAttrTypes)
	if prior == nil {
		// The create's digest knew no live SANs: the first refresh reads
		// them, with the digest that keeps them.
		m.LiveSANs = types.ObjectNull(sansAttrTypes)
		return diags
	}
	if d.HasError() || len(out.Files) != 1 {
		return diags
	}
	issued, _ := out.Files[0].(remote.IssuedCertificate)
	v, known := validityOf(prior)
	if !known || prior.RemoteSHA256.ValueString() != hostres.DesiredDigest(out.Files) {
		return diags // missing, or lacking what the plan wants: re-issued
	}
	if due := issued.Want.Due(v, time.Now()); due != "" {
		diags.AddWarning("Certificate Due for Renewal: "+prior.ID.ValueString(), fmt.Sprintf("%s: the certificate %s. The "+
			"apply issues its successor, as it issues one for a SAN change, and proves it before the node keeps it.",
			prior.CertificatePath.ValueString(), due))
		return diags
	}
	m.NotBefore, m.NotAfter, m.CANotAfter, m.LiveSANs = prior.NotBefore, prior.NotAfter, prior.CANotAfter, prior.LiveSANs
	return diags
}

// validityOf is what the state read of the certificate's validity.
func validityOf(m *servingCertificateModel) (certissue.Validity, bool) {
	var v certissue.Validity
	for _, f := range []struct {
		value types.String
		to    *time.Time
	}{{m.NotBefore, &v.NotBefore}, {m.NotAfter, &v.NotAfter}, {m.CANotAfter, &v.CANotAfter}} {
		t, err := time.Parse(time.RFC3339, f.value.ValueString())
		if err != nil {
			return v, false
		}
		*f.to = t
	}
	return v, true
}

func (m *servingCertificateModel) Render(*servingCertificateModel) (hostres.Rendered, diag.Diagnostics) {
	var diags diag.Diagnostics
	want := certissue.Want{KeepLiveSANs: !m.KeepLiveSANs.Equal(types.BoolValue(false)), Algorithm: m.KeyAlgorithm.ValueString()}
	if m.SANs != nil {
		want.DNSNames, want.IPAddresses = stringValues(m.SANs.DNSNames), stringValues(m.SANs.IPAddresses)
	}
	if _, err := certissue.NewSANs(want.DNSNames, want.IPAddresses); err != nil {
		diags.AddAttributeError(path.Root("sans"), "Invalid SAN", err.Error()+": give kha_cluster_endpoints' apiserver_cert_sans.")
	} else if len(want.DNSNames)+len(want.IPAddresses) == 0 {
		diags.AddAttributeError(path.Root("sans"), "No SANs", "an apiserver certificate needs at least one SAN: give kha_cluster_endpoints' apiserver_cert_sans.")
	}
	if v := m.Validity.ValueString(); v != "" {
		want.Validity = durationOr(m.Validity, 0)
		if want.Validity < 24*time.Hour {
			diags.AddAttributeError(path.Root("validity"), "Validity Too Short", fmt.Sprintf("%s is less than a day: a certificate is "+
				"issued for whole days, e.g. 8760h for a year.", v))
		}
	}
	want.RenewBefore, want.RenewAtThird = durationOr(m.RenewBefore, certissue.ExpiryWatch), !known(m.RenewBefore)
	if want.Validity > 0 && want.RenewBefore >= want.Validity && !want.RenewAtThird {
		diags.AddAttributeError(path.Root("renew_before"), "Renewal Window Not Shorter Than Validity", fmt.Sprintf("renew_before "+
			"(%s) is not shorter than validity (%s): every certificate would be due for renewal as soon as it is issued. Shorten "+
			"renew_before or lengthen validity.", want.RenewBefore, want.Validity))
	}
	cert, key := m.CertificatePath.ValueString(), m.KeyPath.ValueString()
	if known(m.CertificatePath) && known(m.KeyPath) && filepath.Dir(cert) != filepath.Dir(key) {
		diags.AddAttributeError(path.Root("key_path"), "Key in Another Directory", fmt.Sprintf("%s is not in %s, the "+
			"certificate's directory: the key and the certificate are renamed into place side by side.", key, filepath.Dir(cert)))
	}
	serving, verify := durationOr(m.ServingTimeout, 90*time.Second), durationOr(m.VerifyTimeout, 30*time.Second)
	endpoints := stringValues(m.VerifyEndpoints)
	var check remote.CertificateCheck
	if !m.Verify.Equal(types.BoolValue(false)) {
		address := m.APIServerAddress.ValueString()
		if !known(m.APIServerAddress) {
			address = "127.0.0.1:6443"
		}
		check = apiserverCertificateCheck{address: address, endpoints: endpoints, serving: serving, verify: verify}
	}
	return hostres.Rendered{AlwaysDelivered: true, Files: []remote.Item{remote.IssuedCertificate{
		CertPath: cert, KeyPath: key, CACertPath: m.CACertificatePath.ValueString(), CAKeyPath: m.CAKeyPath.ValueString(),
		Want: want, LastSeen: m.lastSeen(), ReloadCommand: m.ReloadCommand.ValueString(), Check: check,
		// Past the longest the checks can take, the node stops waiting.
		ConfirmWithin: serving + verify*time.Duration(len(endpoints)+1) + 15*time.Second,
	}}}, diags
}

// apiserverCertificateCheck proves a certificate on a node's apiserver:
// served at its address, then through each endpoint.
type apiserverCertificateCheck struct {
	address         string
	endpoints       []string
	serving, verify time.Duration
}

// retryPause is the pause between two handshakes that did not show what
// a check waits for.
const retryPause = 200 * time.Millisecond

// Serving waits until the apiserver presents cert.
func (k apiserverCertificateCheck) Serving(ctx context.Context, c *remote.Client, cert *x509.Certificate) error {
	ctx, cancel := context.WithTimeout(ctx, k.serving)
	defer cancel()
	var last error
	for {
		raw, err := handshakeCertificate(ctx, c, k.address, "", "")
		switch {
		case err == nil && bytes.Equal(raw, cert.Raw):
			return nil
		case err == nil:
			last = errors.New("it still serves another certificate")
		default:
			last = err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("the apiserver at %s did not serve the new certificate (serial %x) within %s: %v", k.address,
				cert.SerialNumber, k.serving, last)
		case <-time.After(retryPause):
		}
	}
}

// Verify dials each endpoint until a handshake lands on the apiserver
// that presents cert, which must verify against ca for the endpoint's
// host.
func (k apiserverCertificateCheck) Verify(ctx context.Context, c *remote.Client, cert, ca *x509.Certificate) error {
	caPEM := string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ca.Raw}))
	if err := verifyChain(cert.Raw, nil, caPEM, hostOf(k.address)); err != nil {
		return fmt.Errorf("%s: %w", k.address, err)
	}
	for _, endpoint := range k.endpoints {
		if err := k.verifyEndpoint(ctx, c, endpoint, cert, caPEM); err != nil {
			return err
		}
	}
	return nil
}

func (k apiserverCertificateCheck) verifyEndpoint(ctx context.Context, c *remote.Client, endpoint string, cert *x509.Certificate, caPEM string) error {
	u, err := url.Parse(endpoint)
	if err != nil {
		return err
	}
	address := u.Host
	if u.Port() == "" {
		address = net.JoinHostPort(u.Hostname(), "443")
	}
	ctx, cancel := context.WithTimeout(ctx, k.verify)
	defer cancel()
	others, last := 0, error(nil)
	for {
		raw, err := handshakeCertificate(ctx, c, address, u.Hostname(), "")
		if err == nil && bytes.Equal(raw, cert.Raw) {
			if err := verifyChain(raw, nil, caPEM, u.Hostname()); err != nil {
				return fmt.Errorf("%s: %w", endpoint, err)
			}
			return nil
		}
		if err == nil {
			others++
		} else {
			last = err
		}
		select {
		case <-ctx.Done():
			why := fmt.Sprintf("%d handshakes landed on other apiservers", others)
			if last != nil {
				why += fmt.Sprintf(", the last failure: %v", last)
			}
			return fmt.Errorf("%s never reached this node's apiserver within %s (%s): is the node a backend of it?", endpoint, k.verify, why)
		case <-time.After(retryPause / 4):
		}
	}
}

// hostOf is the host of host:port.
func hostOf(address string) string {
	host, _, _ := net.SplitHostPort(address)
	return host
}

// ImportState takes host:port:path of the certificate; the SANs are the
// certificate's, the paths kubeadm's next to it.
func (r *apiserverServingCertificateResource) ImportState(ctx context.Context, req resource.ImportStateRequest, resp *resource.ImportStateResponse) {
	m := servingCertificateModel{KeepLiveSANs: types.BoolValue(true), Verify: types.BoolValue(true), APIServerAddress: types.StringValue("127.0.0.1:6443"),
		ServingTimeout: types.StringValue("90s"), VerifyTimeout: types.StringValue("30s"), ReloadCommand: types.StringValue("")}
	example := "10.0.0.11:22:" + kubeadmPKI + "apiserver.crt"
	rest, client := r.ImportHost(ctx, req.ID, example, &m.Common, resp.Private, &resp.Diagnostics)
	if resp.Diagnostics.HasError() {
		return
	}
	if !hostres.FilePathPattern.MatchString(rest) {
		resp.Diagnostics.AddError("Invalid Import ID", fmt.Sprintf("%q in %q is not an absolute path to a file, e.g. %s.", rest, req.ID, example))
		return
	}
	dir := filepath.Dir(rest)
	m.CertificatePath, m.KeyPath = types.StringValue(rest), types.StringValue(filepath.Join(dir, "apiserver.key"))
	m.CACertificatePath, m.CAKeyPath = types.StringValue(filepath.Join(dir, "ca.crt")), types.StringValue(filepath.Join(dir, "ca.key"))
	text, err := client.ReadFile(ctx, rest)
	var cert *x509.Certificate
	if err == nil {
		cert, err = certissue.ParsePEM(text)
	}
	if err != nil {
		resp.Diagnostics.AddError("Import Failed", fmt.Sprintf("%s: %v", rest, err))
		return
	}
	sans := certissue.SANsOf(cert)
	m.SANs = &sansModel{DNSNames: typedStrings(sans.DNSNames), IPAddresses: typedStrings(sans.IPAddresses)}
	m.LiveSANs = liveSANsValue(sans)
	out, d := m.Render(nil)
	resp.Diagnostics.Append(d...)
	m.SHA256 = types.StringValue(hostres.DesiredDigest(out.Files))
	m.RemoteSHA256 = m.SHA256
	m.DestroyActions = hostres.DestroyActions(out.Files, &m.Common, func(string) (bool, bool) { return false, true }, true)
	resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
}

// typedStrings are values as a list of known strings.
func typedStrings(values []string) []types.String {
	out := make([]types.String, len(values))
	for i, v := range values {
		out[i] = types.StringValue(v)
	}
	return out
}

func (m *servingCertificateModel) ConflictName() string {
	return fmt.Sprintf("kha_apiserver_serving_certificate with certificate_path = %q", m.CertificatePath.ValueString())
}

// PathSettings: the attributes that set its files' paths.
func (m *servingCertificateModel) PathSettings() []hostres.PathSetting {
	return []hostres.PathSetting{{Attribute: path.Root("certificate_path"), Value: m.CertificatePath}}
}

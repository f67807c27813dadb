package provider

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"syscall"
	"time"

	"github.com/hashicorp/terraform-plugin-framework-validators/datasourcevalidator"
	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-framework/datasource/schema"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-log/tflog"
	"golang.org/x/crypto/ssh"

	"github.com/kha/terraform-provider-kha/internal/hostres"
	"github.com/kha/terraform-provider-kha/internal/remote"
)

var (
	_ datasource.DataSourceWithConfigure        = (*apiserverCertificateDataSource)(nil)
	_ datasource.DataSourceWithConfigValidators = (*apiserverCertificateDataSource)(nil)
)

// NewAPIServerCertificateDataSource is the constructor of
// kha_apiserver_certificate.
func NewAPIServerCertificateDataSource() datasource.DataSource {
	return &apiserverCertificateDataSource{}
}

type apiserverCertificateDataSource struct {
	data *hostres.ProviderData
}

type apiserverCertificateModel struct {
	SSH         types.Object   `tfsdk:"ssh"`
	Path        types.String   `tfsdk:"path"`
	Address     types.String   `tfsdk:"address"`
	ServerName  types.String   `tfsdk:"server_name"`
	DNSNames    []types.String `tfsdk:"dns_names"`
	IPAddresses []types.String `tfsdk:"ip_addresses"`
	NotBefore   types.String   `tfsdk:"not_before"`
	NotAfter    types.String   `tfsdk:"not_after"`
	Subject     types.String   `tfsdk:"subject"`
	Issuer      types.String   `tfsdk:"issuer"`
	Fingerprint types.String   `tfsdk:"sha256_fingerprint"`
	PEM         types.String   `tfsdk:"certificate_pem"`
	Source      types.String   `tfsdk:"source"`
	CAPEM       types.String   `tfsdk:"ca_pem"`
	// AllowMissing reads a missing certificate as null, Found false.
	AllowMissing types.Bool `tfsdk:"allow_missing"`
	Found        types.Bool `tfsdk:"found"`
}

func (d *apiserverCertificateDataSource) Metadata(_ context.Context, req datasource.MetadataRequest, resp *datasource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_apiserver_certificate"
}

func (d *apiserverCertificateDataSource) Configure(_ context.Context, req datasource.ConfigureRequest, resp *datasource.ConfigureResponse) {
	d.data = hostres.ProviderDataFrom(req.ProviderData, &resp.Diagnostics)
}

func (d *apiserverCertificateDataSource) ConfigValidators(context.Context) []datasource.ConfigValidator {
	return []datasource.ConfigValidator{datasourcevalidator.AtLeastOneOf(path.MatchRoot("ssh"), path.MatchRoot("address"))}
}

func (d *apiserverCertificateDataSource) Schema(_ context.Context, _ datasource.SchemaRequest, resp *datasource.SchemaResponse) {
	computedList := func(description string) schema.ListAttribute {
		return schema.ListAttribute{Computed: true, ElementType: types.StringType, MarkdownDescription: description}
	}
	computed := func(description string) schema.StringAttribute {
		return schema.StringAttribute{Computed: true, MarkdownDescription: description}
	}
	resp.Schema = schema.Schema{
		MarkdownDescription: "Reads the certificate the cluster's apiserver really has: the file on a control-plane node " +
			"over SSH (`ssh`, `path`), or the certificate an apiserver presents in a TLS handshake (`address`, from " +
			"Terraform's machine or, with `ssh`, from the node). Read at plan time, its SANs go straight into " +
			"`kha_cluster_endpoints`' `existing_cert_sans`, so that the plan fails, naming each endpoint and the SAN it " +
			"lacks, before a new load balancer name or a new node reaches clients that would fail with `x509: " +
			"certificate is valid for …, not …`:\n\n" +
			"```terraform\nexisting_cert_sans = {\n  dns_names    = data.kha_apiserver_certificate.live.dns_names\n" +
			"  ip_addresses = data.kha_apiserver_certificate.live.ip_addresses\n}\n```\n\n" +
			"By default the handshake verifies nothing: it reads what is served (a certificate is public; nothing secret is " +
			"read or sent). Set `ca_pem` to the cluster CA to accept only a certificate that CA signed for the address.\n\n" +
			"A node that does not answer over SSH (down, off the network, or dropping every packet) fails the read once " +
			"`ssh.refresh_timeout` ends, however many reads name it: unlike a resource, a data source has no earlier " +
			"value to keep, and SANs checked against nothing would pass a plan that breaks clients. Read another " +
			"control-plane node, or `address` with `allow_missing` while the cluster has no apiserver yet.",
		Attributes: map[string]schema.Attribute{
			"ssh": hostres.DataSourceSSHAttribute(),
			"path": schema.StringAttribute{Optional: true, Validators: []validator.String{filePathValidator()},
				MarkdownDescription: "The certificate file on the node, PEM. Default `/etc/kubernetes/pki/apiserver.crt` (kubeadm's) " +
					"when `ssh` is set and `address` is not."},
			"address": schema.StringAttribute{Optional: true,
				MarkdownDescription: "`host:port` of an apiserver (or a load balancer passing TLS through) to read the certificate " +
					"from in a TLS handshake, e.g. `10.0.0.11:6443`."},
			"server_name": schema.StringAttribute{Optional: true,
				MarkdownDescription: "SNI of the handshake; default: the host of `address` when it is a name."},
			"ca_pem": schema.StringAttribute{Optional: true, Validators: []validator.String{caPEMValidator{}},
				MarkdownDescription: "The cluster CA (PEM, e.g. `/etc/kubernetes/pki/ca.crt`'s content). When set, the " +
					"certificate read must chain to it, and in a handshake it must also be valid for `server_name` (or the host " +
					"of `address`): the read fails otherwise, so an interceptor cannot hand the plan SANs of its choosing. " +
					"Default: read what is served, unverified."},
			"allow_missing": schema.BoolAttribute{Optional: true,
				MarkdownDescription: "Read a cluster that has no apiserver yet (bootstrap) as no certificate instead of failing: " +
					"when the file at `path` does not exist, or nothing answers at `address` (the connection is refused, times " +
					"out or is closed before the TLS handshake), `found` is `false` and every other read attribute, the SAN " +
					"lists included, is null. `kha_cluster_endpoints` reads `existing_cert_sans` whose lists are both null as " +
					"\"no certificate yet\" and checks nothing against it, so one configuration serves the first apply and " +
					"every later one. A certificate that is there but does not parse or verify still fails the read. While " +
					"an apiserver that exists is down, the plan checks no SANs either: `found` says which case it is. " +
					"Default `false`."},
			"found": schema.BoolAttribute{Computed: true,
				MarkdownDescription: "Whether a certificate was read: `false` only with `allow_missing` when there is none yet."},
			"dns_names":          computedList("DNS SANs; null when `found` is `false`."),
			"ip_addresses":       computedList("IP SANs, canonical form; null when `found` is `false`."),
			"not_before":         computed("Start of validity, RFC 3339."),
			"not_after":          computed("End of validity, RFC 3339: renew before it."),
			"subject":            computed("Subject DN."),
			"issuer":             computed("Issuer DN."),
			"sha256_fingerprint": computed("SHA-256 of the certificate (DER), hex."),
			"certificate_pem":    computed("The certificate, PEM."),
			"source":             computed("Where it was read: `file <host>:<path>` or `handshake <address>`."),
		},
	}
}

func (d *apiserverCertificateDataSource) Read(ctx context.Context, req datasource.ReadRequest, resp *datasource.ReadResponse) {
	var m apiserverCertificateModel
	resp.Diagnostics.Append(req.Config.Get(ctx, &m)...)
	if resp.Diagnostics.HasError() {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, hostres.DefaultReadTimeout)
	defer cancel()
	var client *remote.Client
	if !m.SSH.IsNull() {
		var diags diag.Diagnostics
		client, diags = d.connect(ctx, m.SSH)
		resp.Diagnostics.Append(diags...)
		if diags.HasError() {
			return
		}
	}
	var der []byte
	var err error
	switch {
	case known(m.Address):
		m.Source = types.StringValue("handshake " + m.Address.ValueString())
		tflog.Debug(ctx, "reading the apiserver certificate in a TLS handshake", map[string]any{"address": m.Address.ValueString(), "via_ssh": client != nil})
		der, err = handshakeCertificate(ctx, client, m.Address.ValueString(), m.ServerName.ValueString(), m.CAPEM.ValueString())
	default:
		if !known(m.Path) {
			m.Path = types.StringValue("/etc/kubernetes/pki/apiserver.crt")
		}
		m.Source = types.StringValue("file " + client.Address() + ":" + m.Path.ValueString())
		tflog.Debug(ctx, "reading the apiserver certificate file", map[string]any{"host": client.Address(), "path": m.Path.ValueString()})
		der, err = certificateFile(ctx, client, m.Path.ValueString())
		if err == nil && known(m.CAPEM) {
			err = verifyChain(der, nil, m.CAPEM.ValueString(), "")
		}
	}
	if err != nil && m.AllowMissing.ValueBool() && certificateMissing(err) {
		tflog.Debug(ctx, "no apiserver certificate yet", map[string]any{"source": m.Source.ValueString(), "error": err.Error()})
		m.Found = types.BoolValue(false)
		m.NotBefore, m.NotAfter, m.Subject, m.Issuer = types.StringNull(), types.StringNull(), types.StringNull(), types.StringNull()
		m.Fingerprint, m.PEM = types.StringNull(), types.StringNull()
		resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
		return
	}
	if err != nil {
		resp.Diagnostics.AddError("Reading the Apiserver Certificate Failed", err.Error())
		return
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		resp.Diagnostics.AddError("Reading the Apiserver Certificate Failed", "the certificate does not parse: "+err.Error())
		return
	}
	m.Found = types.BoolValue(true)
	m.DNSNames, m.IPAddresses = []types.String{}, []types.String{}
	for _, n := range cert.DNSNames {
		m.DNSNames = append(m.DNSNames, types.StringValue(n))
	}
	for _, ip := range cert.IPAddresses {
		m.IPAddresses = append(m.IPAddresses, types.StringValue(ip.String()))
	}
	sum := sha256.Sum256(der)
	m.NotBefore = types.StringValue(cert.NotBefore.UTC().Format(time.RFC3339))
	m.NotAfter = types.StringValue(cert.NotAfter.UTC().Format(time.RFC3339))
	m.Subject, m.Issuer = types.StringValue(cert.Subject.String()), types.StringValue(cert.Issuer.String())
	m.Fingerprint = types.StringValue(hex.EncodeToString(sum[:]))
	m.PEM = types.StringValue(string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})))
	resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
}

// connect reaches the node of the data source's `ssh`, with the
// provider's default_ssh applied and never trusting on first use.
func (d *apiserverCertificateDataSource) connect(ctx context.Context, obj types.Object) (*remote.Client, diag.Diagnostics) {
	c, diags := hostres.SSHFrom(ctx, obj)
	if diags.HasError() {
		return nil, diags
	}
	resolved, err := hostres.ResolveSSH(c, d.data.SSHDefaults(), "")
	if err == nil && resolved.Config.TrustsOnFirstUse() {
		err = errNoFirstUseForDataSources(resolved.Config)
	}
	if err == nil {
		err = resolved.Config.Validate()
	}
	if err == nil && d.data == nil {
		err = errors.New("the provider is not configured")
	}
	var client *remote.Client
	if err == nil {
		client, err = d.data.Pool().GetForRead(ctx, resolved.Config)
	}
	if err != nil {
		diags.AddAttributeError(path.Root("ssh"), "SSH Connection Failed", err.Error())
	}
	return client, diags
}

// noAnswerError is a connection to address that failed before any TLS
// was spoken: nothing listens there, or nothing behind it answers.
type noAnswerError struct {
	address string
	err     error
}

func (e *noAnswerError) Error() string {
	return "nothing answers at " + e.address + ": " + e.err.Error()
}
func (e *noAnswerError) Unwrap() error { return e.err }

// nothingAnswers says whether a dial failed because nothing answers at
// the address: refused (from here, or from the node through SSH), no
// route, or no answer in time. A host that forbids TCP forwarding, or a
// name that does not resolve, is a failure of its own.
func nothingAnswers(err error) bool {
	var channel *ssh.OpenChannelError
	if errors.As(err, &channel) {
		return channel.Reason == ssh.ConnectionFailed
	}
	return errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.EHOSTUNREACH) || errors.Is(err, syscall.ENETUNREACH) ||
		errors.Is(err, context.DeadlineExceeded) || errors.Is(err, os.ErrDeadlineExceeded)
}

// certificateMissing says whether a read failed because there is no
// certificate yet: the file does not exist, or nothing answers at the
// address. A certificate that does not parse or verify is not missing.
func certificateMissing(err error) bool {
	var noAnswer *noAnswerError
	return errors.Is(err, fs.ErrNotExist) || errors.As(err, &noAnswer)
}

// certificateFile reads the first certificate of a PEM file on the host.
func certificateFile(ctx context.Context, client *remote.Client, p string) ([]byte, error) {
	content, err := client.ReadFile(ctx, p)
	if err != nil {
		return nil, err
	}
	for rest := content; ; {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			return nil, fmt.Errorf("%s has no PEM certificate", p)
		}
		if block.Type == "CERTIFICATE" {
			return block.Bytes, nil
		}
	}
}

// errNoFirstUseForDataSources refuses trust on first use for a data
// source: it could record no key, so every read would accept any host and
// hand it the credentials.
func errNoFirstUseForDataSources(cfg remote.Config) error {
	return fmt.Errorf("%w %s: kha_apiserver_certificate never trusts on first use (inherited from default_ssh or not), because a "+
		"data source has nowhere to record the key and every read would accept any host, credentials included. Pin the host: "+
		"set ssh.host_key to its public key (a line of `%s` without the host name), ssh.known_hosts (here or on "+
		"default_ssh) to known_hosts content, or the key of the CA that signs its host certificate%s", remote.ErrNoHostKey, cfg.Address(),
		cfg.KeyscanCommand(), cfg.KeyscanWhere())
}

// caPEMValidator wants PEM text with at least one certificate.
type caPEMValidator struct{}

func (caPEMValidator) Description(context.Context) string {
	return "must be PEM text holding at least one CA certificate"
}

func (v caPEMValidator) MarkdownDescription(ctx context.Context) string { return v.Description(ctx) }

func (caPEMValidator) ValidateString(_ context.Context, req validator.StringRequest, resp *validator.StringResponse) {
	if known(req.ConfigValue) && !x509.NewCertPool().AppendCertsFromPEM([]byte(req.ConfigValue.ValueString())) {
		resp.Diagnostics.AddAttributeError(req.Path, "Invalid CA Certificate",
			"ca_pem holds no PEM certificate: give the cluster CA's certificate, e.g. the content of /etc/kubernetes/pki/ca.crt.")
	}
}

// verifyChain checks that der chains to a certificate of caPEM (through
// the intermediates served with it) and, when name is set, is valid for
// it (a DNS name or an IP address).
func verifyChain(der []byte, intermediates []*x509.Certificate, caPEM, name string) error {
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return fmt.Errorf("the certificate does not parse: %v", err)
	}
	opts := x509.VerifyOptions{Roots: x509.NewCertPool(), Intermediates: x509.NewCertPool(), DNSName: name,
		KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	opts.Roots.AppendCertsFromPEM([]byte(caPEM))
	for _, c := range intermediates {
		opts.Intermediates.AddCert(c)
	}
	if _, err := cert.Verify(opts); err != nil {
		return fmt.Errorf("the certificate does not verify against ca_pem: %v", err)
	}
	return nil
}

// handshakeCertificate returns the leaf certificate address presents,
// dialled from the host when client is set. With caPEM it must verify
// against that CA for the server name (or the address's host).
func handshakeCertificate(ctx context.Context, client *remote.Client, address, serverName, caPEM string) ([]byte, error) {
	host, _, err := net.SplitHostPort(address)
	if err != nil {
		return nil, fmt.Errorf("address %q is not host:port", address)
	}
	if serverName == "" && net.ParseIP(host) == nil {
		serverName = host
	}
	var conn net.Conn
	if client != nil {
		conn, err = client.DialTCP(ctx, address)
	} else {
		conn, err = (&net.Dialer{}).DialContext(ctx, "tcp", address)
	}
	if err != nil {
		if nothingAnswers(err) {
			err = &noAnswerError{address: address, err: err}
		}
		return nil, err
	}
	defer conn.Close()
	if deadline, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(deadline)
	}
	// Read what is served; ca_pem, when set, is checked below so that the
	// error says what did not verify.
	tc := tls.Client(conn, &tls.Config{ServerName: serverName, InsecureSkipVerify: true})
	if err = tc.HandshakeContext(ctx); err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET) {
			// Accepted and closed: a load balancer with no apiserver
			// behind it yet.
			err = &noAnswerError{address: address, err: err}
		}
		return nil, fmt.Errorf("TLS handshake with %s: %w", address, err)
	}
	certs := tc.ConnectionState().PeerCertificates
	if len(certs) == 0 {
		return nil, fmt.Errorf("%s presented no certificate", address)
	}
	if caPEM != "" {
		name := serverName
		if name == "" {
			name = host
		}
		if err := verifyChain(certs[0].Raw, certs[1:], caPEM, name); err != nil {
			return nil, fmt.Errorf("%s: %w", address, err)
		}
	}
	return certs[0].Raw, nil
}

// Package provider holds the Terraform adapters of kha: schemas, plan
// modification and the translation between Terraform values and the pure
// packages that do the work.
package provider

import (
	"context"

	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-framework/function"
	"github.com/hashicorp/terraform-plugin-framework/provider"
	"github.com/hashicorp/terraform-plugin-framework/provider/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/kha/terraform-provider-kha/internal/buildinfo"
	"github.com/kha/terraform-provider-kha/internal/hostres"
	"github.com/kha/terraform-provider-kha/internal/remote"
)

var (
	_ provider.Provider              = (*khaProvider)(nil)
	_ provider.ProviderWithFunctions = (*khaProvider)(nil)
)

type khaProvider struct {
	version string
	commit  string
	// pool is shared by every resource of one Terraform run, so each host
	// gets one SSH connection however many resources write to it.
	pool *remote.Pool
}

type providerModel struct {
	DefaultSSH types.Object `tfsdk:"default_ssh"`
	Rollout    types.Object `tfsdk:"rollout"`
}

// New returns a constructor of the provider, as providerserver.Serve expects.
func New(version, commit string) func() provider.Provider {
	buildinfo.SetVersion(version)
	return func() provider.Provider {
		return &khaProvider{version: version, commit: commit, pool: remote.NewPool(tflogLogger{})}
	}
}

func (p *khaProvider) Metadata(_ context.Context, _ provider.MetadataRequest, resp *provider.MetadataResponse) {
	resp.TypeName = "kha"
	resp.Version = p.version
}

func (p *khaProvider) Schema(_ context.Context, _ provider.SchemaRequest, resp *provider.SchemaResponse) {
	resp.Schema = schema.Schema{
		MarkdownDescription: "The `kha` provider makes the Kubernetes control plane of self-managed clusters highly " +
			"available from Terraform: it computes the kube-apiserver and etcd access endpoints, certificate SANs " +
			"and kubeadm settings at plan time, renders node-local and external load balancers, and applies their " +
			"configuration to hosts over SSH.",
		Attributes: map[string]schema.Attribute{
			"default_ssh": hostres.ProviderSSHAttribute(),
			"rollout":     hostres.RolloutAttribute(),
		},
	}
}

func (p *khaProvider) Configure(ctx context.Context, req provider.ConfigureRequest, resp *provider.ConfigureResponse) {
	tflog.Info(ctx, "configuring the kha provider", map[string]any{
		"version": p.version, "commit": p.commit, "user_agent": buildinfo.UserAgent(),
		"terraform_version": req.TerraformVersion,
	})
	var m providerModel
	resp.Diagnostics.Append(req.Config.Get(ctx, &m)...)
	if resp.Diagnostics.HasError() {
		return
	}
	data, diags := hostres.NewProviderData(ctx, p.pool, m.DefaultSSH, m.Rollout)
	resp.Diagnostics.Append(diags...)
	if diags.HasError() {
		return
	}
	resp.ResourceData = data
	resp.DataSourceData = data
}

func (p *khaProvider) Resources(_ context.Context) []func() resource.Resource {
	return []func() resource.Resource{
		NewClusterEndpointsResource,
		NewEndpointConfigMapsResource,
		NewFileResource,
		NewHAProxyConfigResource,
		NewNginxConfigResource,
		NewEtcdAccessResource,
		NewHostsEntriesResource,
		NewKeepalivedConfigResource,
		NewKubeconfigServerResource,
		NewAPIServerServingCertificateResource,
		NewHandoverResource,
		NewKubeVIPResource,
	}
}

func (p *khaProvider) DataSources(_ context.Context) []func() datasource.DataSource {
	return []func() datasource.DataSource{
		NewAPIServerCertificateDataSource,
	}
}

func (p *khaProvider) Functions(_ context.Context) []func() function.Function {
	return []func() function.Function{
		NewCertSANsFunction,
		NewEndpointURLFunction,
		NewPodEndpointFunction,
	}
}

package provider

import (
	"context"
	"fmt"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/function"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/kha/terraform-provider-kha/internal/endpoints"
)

var _ function.Function = (*certSANsFunction)(nil)

// NewCertSANsFunction is the constructor of provider::kha::cert_sans.
func NewCertSANsFunction() function.Function { return &certSANsFunction{} }

type certSANsFunction struct{}

func (f *certSANsFunction) Metadata(_ context.Context, _ function.MetadataRequest, resp *function.MetadataResponse) {
	resp.Name = "cert_sans"
}

func (f *certSANsFunction) Definition(_ context.Context, _ function.DefinitionRequest, resp *function.DefinitionResponse) {
	resp.Definition = function.Definition{
		Summary: "Sorts names and IP addresses into certificate SANs, in order and without repeats.",
		MarkdownDescription: "Takes a list of DNS names and IP literals and returns `{ dns_names, ip_addresses }` as a " +
			"certificate wants them: IPs in canonical form (`FD00::0001` and `fd00::1` are one SAN, `::ffff:10.0.0.1` is " +
			"`10.0.0.1`), names lowercased without a trailing dot, first occurrence kept. Feeds `tls_cert_request`'s " +
			"`dns_names` and `ip_addresses` directly. An entry that is neither a name nor an IP is an error naming it.",
		Parameters: []function.Parameter{
			function.ListParameter{Name: "addresses", ElementType: types.StringType, MarkdownDescription: "DNS names (a leading `*.` is allowed) and IP literals."},
		},
		Return: function.ObjectReturn{AttributeTypes: sansType},
	}
}

func (f *certSANsFunction) Run(ctx context.Context, req function.RunRequest, resp *function.RunResponse) {
	var addresses []string
	resp.Error = function.ConcatFuncErrors(req.Arguments.Get(ctx, &addresses))
	if resp.Error != nil {
		return
	}
	sans, problems := endpoints.CertSANs(addresses)
	if problems.HasErrors() {
		resp.Error = function.NewArgumentFuncError(0, fmt.Sprintf("Invalid SAN at index %v: %s", problems[0].Path[0], problems[0].Detail))
		return
	}
	result, diags := types.ObjectValue(sansType, map[string]attr.Value{
		"dns_names":    stringList(sans.DNSNames),
		"ip_addresses": stringList(sans.IPAddresses),
	})
	resp.Error = function.FuncErrorFromDiags(ctx, diags)
	if resp.Error == nil {
		resp.Error = resp.Result.Set(ctx, result)
	}
}

package provider

import (
	"context"

	"github.com/hashicorp/terraform-plugin-framework/function"

	"github.com/kha/terraform-provider-kha/internal/endpoints"
)

var _ function.Function = (*endpointURLFunction)(nil)

// NewEndpointURLFunction is the constructor of provider::kha::endpoint_url.
func NewEndpointURLFunction() function.Function { return &endpointURLFunction{} }

type endpointURLFunction struct{}

func (f *endpointURLFunction) Metadata(_ context.Context, _ function.MetadataRequest, resp *function.MetadataResponse) {
	resp.Name = "endpoint_url"
}

func (f *endpointURLFunction) Definition(_ context.Context, _ function.DefinitionRequest, resp *function.DefinitionResponse) {
	resp.Definition = function.Definition{
		Summary: "Builds an https URL from a host and a port, bracketing IPv6 literals.",
		MarkdownDescription: "Returns `https://<host>:<port>` with the host in canonical form: IPv6 literals are bracketed " +
			"and compressed (`fd00::0001` → `https://[fd00::1]:6443`), DNS names are lowercased. Use it wherever a URL is " +
			"assembled from an address, so IPv6 clusters get valid URLs.",
		Parameters: []function.Parameter{
			function.StringParameter{Name: "host", MarkdownDescription: "IP address or DNS name."},
			function.Int64Parameter{Name: "port", MarkdownDescription: "TCP port, 1–65535."},
		},
		Return: function.StringReturn{},
	}
}

func (f *endpointURLFunction) Run(ctx context.Context, req function.RunRequest, resp *function.RunResponse) {
	var host string
	var port int64
	resp.Error = function.ConcatFuncErrors(req.Arguments.Get(ctx, &host, &port))
	if resp.Error != nil {
		return
	}
	if _, problems := endpoints.CertSANs([]string{host}); problems.HasErrors() {
		resp.Error = function.NewArgumentFuncError(0, "Invalid host: "+problems[0].Detail)
		return
	}
	if port < 1 || port > 65535 {
		resp.Error = function.NewArgumentFuncError(1, "Invalid port: a TCP port is between 1 and 65535.")
		return
	}
	resp.Error = resp.Result.Set(ctx, endpoints.URL(host, int(port)))
}

package provider

import (
	"context"
	"fmt"
	"os"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/function"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/kha/terraform-provider-kha/internal/endpoints"
)

var _ function.Function = (*podEndpointFunction)(nil)

// NewPodEndpointFunction is the constructor of provider::kha::pod_endpoint.
func NewPodEndpointFunction() function.Function { return &podEndpointFunction{hostsFile: "/etc/hosts"} }

type podEndpointFunction struct {
	// hostsFile is the hosts file of the machine running Terraform: a
	// name it maps to loopback is refused.
	hostsFile string
}

var podEndpointType = map[string]attr.Type{"url": types.StringType, "host": types.StringType, "port": types.Int64Type}

func (f *podEndpointFunction) Metadata(_ context.Context, _ function.MetadataRequest, resp *function.MetadataResponse) {
	resp.Name = "pod_endpoint"
}

func (f *podEndpointFunction) Definition(_ context.Context, _ function.DefinitionRequest, resp *function.DefinitionResponse) {
	resp.Definition = function.Definition{
		Summary: "Checks an apiserver URL meant for pods outside the host network and splits it into host and port.",
		MarkdownDescription: "Returns `{ url, host, port }` of an `https://host[:port]` apiserver URL (port default `443`), " +
			"with the host canonical (an address in any inet_aton spelling, such as `10.1`, comes back as `10.0.0.1`) and, " +
			"if IPv6, without brackets, as Cilium's `k8sServiceHost` and Calico's `KUBERNETES_SERVICE_HOST` take it. Wrap " +
			"any apiserver URL you hand to a pod outside the host network with it (a Helm value, a ConfigMap): a loopback " +
			"host (`localhost`, `ip6-localhost`, `ip6-loopback`, `localhost.localdomain`, any name under `.localhost`, any " +
			"name the `/etc/hosts` of the machine running Terraform maps to a loopback address, `127.0.0.0/8`, `::1`, and " +
			"`0.0.0.0` or `::`, which dial this host too, in any spelling a resolver or curl reads as one: `127.1`, " +
			"`0x7f000001`, `2130706433`, `0177.0.0.1`, `[::ffff:127.0.0.1]`), such " +
			"as `kha_cluster_endpoints`' `endpoints.global` with node-local load balancers, fails the plan, because a pod's " +
			"loopback is its own and nothing listens there. A function cannot warn, so it fails where a resource " +
			"attribute would warn. `kha_cluster_endpoints`' `pod_network_endpoint` always passes.",
		Parameters: []function.Parameter{
			function.StringParameter{Name: "url", MarkdownDescription: "The apiserver URL, `https://host[:port]`."},
		},
		Return: function.ObjectReturn{AttributeTypes: podEndpointType},
	}
}

func (f *podEndpointFunction) Run(ctx context.Context, req function.RunRequest, resp *function.RunResponse) {
	var u string
	resp.Error = function.ConcatFuncErrors(req.Arguments.Get(ctx, &u))
	if resp.Error != nil {
		return
	}
	pe, err := endpoints.ParsePodEndpoint(u)
	if err != nil {
		resp.Error = function.NewArgumentFuncError(0, "Invalid URL: "+err.Error()+"; give https://host:port")
		return
	}
	if endpoints.IsLoopbackHost(pe.Host) {
		what := u
		if pe.URL != u {
			what += " (" + pe.URL + ")" // the address another spelling dials
		}
		resp.Error = function.NewArgumentFuncError(0, "Loopback endpoint for pods: "+what+" is the pod's own loopback, "+
			"where no apiserver listens for a pod outside the host network. Use kha_cluster_endpoints' pod_network_endpoint "+
			"(the VIP or external load balancer, else a control-plane node) instead of endpoints.global")
		return
	}
	if address, ok := f.controllerLoopback(pe.Host); ok {
		resp.Error = function.NewArgumentFuncError(0, fmt.Sprintf("Loopback endpoint for pods: %s: %s on the machine running "+
			"Terraform maps %s to %s, a loopback address, so the name does not name the apiserver's host everywhere. Give the "+
			"address, or a name every host and pod resolves to it, such as kha_cluster_endpoints' pod_network_endpoint", u, f.hostsFile, pe.Host, address))
		return
	}
	v, d := types.ObjectValue(podEndpointType, map[string]attr.Value{
		"url": types.StringValue(pe.URL), "host": types.StringValue(pe.Host), "port": types.Int64Value(int64(pe.Port))})
	resp.Error = function.ConcatFuncErrors(resp.Error, function.FuncErrorFromDiags(ctx, d))
	if resp.Error == nil {
		resp.Error = resp.Result.Set(ctx, v)
	}
}

// controllerLoopback returns the loopback address the hosts file maps a
// name to. Without a readable hosts file (Windows), no name is.
func (f *podEndpointFunction) controllerLoopback(host string) (string, bool) {
	hosts, err := os.ReadFile(f.hostsFile)
	if err != nil {
		return "", false
	}
	address, ok := endpoints.HostsLoopbackNames(hosts)[host]
	return address, ok
}

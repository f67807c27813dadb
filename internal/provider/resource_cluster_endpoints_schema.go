package provider

import (
	"fmt"
	"maps"
	"regexp"

	"github.com/hashicorp/terraform-plugin-framework-validators/float64validator"
	"github.com/hashicorp/terraform-plugin-framework-validators/int64validator"
	"github.com/hashicorp/terraform-plugin-framework-validators/listvalidator"
	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/booldefault"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/int64default"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringdefault"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/kha/terraform-provider-kha/internal/endpoints"
)

// clusterEndpointsSchemaVersion is 4 since pod_network_endpoint and
// health_check_spec (3 since local_lb_node_ips, 2 since
// apiserver_backends took over from local_lb_backends);
// upgradeClusterEndpointsState fills them in earlier states.
const clusterEndpointsSchemaVersion = 4

// clusterEndpointsSchema is kha_cluster_endpoints' schema, assembled from
// its parts: the inputs, then what is computed at plan time.
func clusterEndpointsSchema() schema.Schema {
	attrs := map[string]schema.Attribute{
		"local_lb":           localLBAttribute(),
		"external_lb":        externalLBAttribute(),
		"kubeadm":            kubeadmAttribute(),
		"existing_cert_sans": existingCertSANsAttribute(),
		"apiserver_backends": apiserverBackendsAttribute("The apiservers a load balancer in front of the control plane "+
			"forwards to, in `control_plane_nodes` order: each node's access address (primary family) and `apiserver_port`. "+
			"Computed in every mode, for the node-local load balancers (`kha_haproxy_config`, `kha_nginx_config`) and an "+
			"external one alike.", ""),
	}
	for _, part := range []map[string]schema.Attribute{clusterNodesAttributes(), apiserverAttributes(), clusterNetworkAttributes(),
		accessAttributes(), nameOutputAttributes(), kubeadmOutputAttributes(), localLBOutputAttributes(), podAttributes(),
		healthCheckAttributes()} {
		maps.Copy(attrs, part)
	}
	return schema.Schema{
		Version: clusterEndpointsSchemaVersion,
		MarkdownDescription: "Computes, at plan time, how every part of a Kubernetes cluster reaches kube-apiserver: the endpoint of " +
			"each node role in each load-balancer mode, the apiserver certificate SANs that make all of them verify, " +
			"the kubeadm `controlPlaneEndpoint`, `/etc/hosts` lines, and the node-local load balancer's listen address " +
			"and backends. The arithmetic is kubespray's (`kube_apiserver_endpoint`, `apiserver_sans`, …) with its " +
			"known defects corrected; each attribute says where it differs.\n\n" +
			"Every computed attribute is known during `plan` once the inputs are, so it can feed DNS records, cloud " +
			"load balancers and certificate resources in the same run.\n\n" +
			"The plan fails when an endpoint would not verify against the apiserver certificate " +
			"(see `existing_cert_sans`), when two services on one node would bind the same socket, or when nodes " +
			"repeat names or addresses.\n\n" +
			"-> This resource is a pure computation: it touches no host, and `terraform import` is not supported " +
			"(there is nothing to import; declare it and apply).",
		Attributes: attrs,
	}
}

// clusterNodesAttributes are the nodes: control plane and workers.
func clusterNodesAttributes() map[string]schema.Attribute {
	return map[string]schema.Attribute{
		"control_plane_nodes": schema.ListNestedAttribute{
			Required: true,
			MarkdownDescription: "Nodes running kube-apiserver (kubespray's `kube_control_plane` group), in order: the " +
				"first is `m0`, used for `kubeadm init` and, without a load balancer, by everyone. With stacked etcd " +
				"(`kubeadm.etcd_endpoints` unset) each runs an etcd member, and the plan guards etcd's quorum: " +
				quorumGuardDoc,
			NestedObject: schema.NestedAttributeObject{Attributes: nodeAttributes("control_plane")},
			Validators:   []validator.List{listvalidator.SizeAtLeast(1)},
		},
		"allow_quorum_risk": allowQuorumRiskAttribute("control-plane node", "control_plane_nodes"),
		"worker_nodes": schema.ListNestedAttribute{
			Optional: true,
			MarkdownDescription: "Nodes without kube-apiserver (kubespray's `kube_node` hosts that are not in " +
				"`kube_control_plane`). A control-plane node that also runs workloads belongs only in `control_plane_nodes`.",
			NestedObject: schema.NestedAttributeObject{Attributes: nodeAttributes("worker")},
		},
		"worker_addresses": schema.MapAttribute{
			Optional:    true,
			ElementType: types.StringType,
			MarkdownDescription: "Workers in compact form, node name → `ip`: each entry is a `worker_nodes` element that " +
				"sets only `name` and `ip`, for fleets whose workers need nothing more (an IPv6-only cluster takes the " +
				"IPv6 address here). They follow `worker_nodes` in name order, and names and addresses are unique across " +
				"both. A worker costs Terraform one value here instead of nine there, so plans and applies of thousands " +
				"of workers run several times faster.",
		},
	}
}

// apiserverAttributes are how kube-apiserver runs on every control-plane node.
func apiserverAttributes() map[string]schema.Attribute {
	return map[string]schema.Attribute{
		"apiserver_port": schema.Int64Attribute{
			Optional: true, Computed: true,
			Default:             int64default.StaticInt64(endpoints.DefaultAPIServerPort),
			Validators:          portValidator,
			MarkdownDescription: fmt.Sprintf("kube-apiserver secure port (kubespray's `kube_apiserver_port`). Default `%d`.", endpoints.DefaultAPIServerPort),
		},
		"apiserver_bind_address": schema.StringAttribute{
			Optional: true, Computed: true,
			Default: stringdefault.StaticString(endpoints.DefaultBindAddress),
			MarkdownDescription: "kube-apiserver bind address on every control-plane node (kubespray's " +
				"`kube_apiserver_bind_address`). Default `::` (every address). Unlike kubespray, which turns `0.0.0.0` into " +
				"the endpoint `https://0.0.0.0:6443` and mangles IPv6 addresses such as `::1` into `127.0.0.11`, kha treats " +
				"`0.0.0.0` like `::` (control-plane nodes reach their own apiserver on `127.0.0.1`), because those endpoints " +
				"reach nothing. " +
				"A specific address must be the node's own; use per-node `bind_address` when nodes differ.",
		},
		"apiserver_anonymous_auth": schema.BoolAttribute{
			Optional: true, Computed: true, Default: booldefault.StaticBool(true),
			MarkdownDescription: "Whether kube-apiserver answers anonymous requests (kubespray's `kube_api_anonymous_auth`, " +
				"kube-apiserver `--anonymous-auth`). Default `true`. `false` (CIS profiles, hardened clusters) goes into " +
				"`kubeadm_cluster_configuration` and into every `apiserver_backends` element, so a `kha_haproxy_config` " +
				"health check that would ask anonymously, get 401 from every apiserver and refuse every connection is a " +
				"plan error instead.",
		},
		"apiserver_shutdown_delay_duration": schema.StringAttribute{
			Optional: true, Validators: []validator.String{durationValidator()},
			MarkdownDescription: "kube-apiserver `--shutdown-delay-duration`: how long a stopping apiserver keeps serving " +
				"while its `/readyz` already fails, so load balancers take it out of rotation before it closes its port. " +
				"Unset, kube-apiserver's default `0s` applies (kubeadm and kubespray set nothing) and nothing is checked. Set, " +
				"it goes into `kubeadm_cluster_configuration` and every `apiserver_backends` element, and the plan warns when " +
				"a load balancer needs longer than this to drop a stopping apiserver: `health_check_spec` here, HAProxy's " +
				"`health_check` (interval × fall) in `kha_haproxy_config`. Choose at least the longest detection time plus " +
				"one interval, e.g. `15s` for the defaults here.",
		},
		"apiserver_goaway_chance": schema.Float64Attribute{
			Optional: true, Validators: []validator.Float64{float64validator.Between(0, 0.02)},
			MarkdownDescription: "kube-apiserver `--goaway-chance`: the share of HTTP/2 requests whose client the apiserver " +
				"asks to reconnect (a GOAWAY; requests in flight finish). Kubelets, controllers and kube-proxy keep one HTTP/2 " +
				"connection for hours: after an apiserver restarts, a load balancer sends them all to the others, and nothing " +
				"moves them back (kubernetes#48610). Unset, `kubeadm_cluster_configuration` sets `0.001` (a request in a " +
				"thousand, OpenShift's value for highly available control planes) where a load balancer spreads clients over " +
				"two or more apiservers that are not draining, and nothing otherwise (`direct` mode, or a VIP that kube-vip " +
				"holds on an apiserver's node, where reconnecting leads back to the same apiserver). `0` turns it off; " +
				"kube-apiserver takes at most `0.02`. Unlike kubespray, which leaves kube-apiserver's default `0` (its users " +
				"add the flag through `kube_kubeadm_apiserver_extra_args`), kha sets it wherever it helps, for that reason.",
		},
		"apiserver_min_request_timeout": schema.Int64Attribute{
			Optional: true, Validators: []validator.Int64{int64validator.Between(1, 86400)},
			MarkdownDescription: "kube-apiserver `--min-request-timeout`, in seconds: the shortest time the apiserver lets a " +
				"watch without its own timeout run (it picks between this and twice this). Unset, kube-apiserver's default " +
				"`1800` applies and nothing is checked. Set, it goes into `kubeadm_cluster_configuration` and every " +
				"`apiserver_backends` element, and `kha_haproxy_config` and `kha_nginx_config` warn when their `proxy_timeouts.client` " +
				"or `proxy_timeouts.server` would cut an idle watch (`kubectl get -w`), `kubectl logs -f` or `exec` sooner, as the " +
				"plan here does for `lb_idle_timeout`.",
		},
	}
}

// podAttributes are the endpoint of pods outside the host network: the
// override and what is computed from it.
func podAttributes() map[string]schema.Attribute {
	return map[string]schema.Attribute{
		"pod_network_endpoint_override": schema.StringAttribute{
			Optional: true,
			MarkdownDescription: "The apiserver URL for pods outside the host network, `https://host:port` (port default " +
				"`443`), instead of kha's choice (see `pod_network_endpoint`): a DNS name with several A records, a VIP kha " +
				"does not manage. Its host joins `apiserver_cert_sans`, so `existing_cert_sans` must cover it. A loopback host " +
				"(`localhost`, `127.0.0.0/8`, `::1`) is a plan warning: a pod's loopback is its own.",
		},
		"pod_network_endpoint": schema.StringAttribute{
			Computed: true,
			MarkdownDescription: "The apiserver URL for in-cluster consumers outside the host network (controllers, webhooks, " +
				"and CNIs that hand the endpoint on to such pods), never `localhost` unless overridden: a node-local load balancer listens " +
				"on each node's loopback, which a pod's network namespace does not share, so `endpoints.global` " +
				"(`https://localhost:<port>` with node-local load balancers) reaches nothing from there. It is " +
				"`pod_network_endpoint_override` when set; else the external load balancer or VIP (`external_lb`, by its " +
				"domain name unless that is a loopback one) when there is one; else the first control-plane node's access address and the apiserver " +
				"port, a single point of failure, which the plan warns about when there are several control-plane nodes. " +
				"kha does not fall back to the `kubernetes` Service (`apiserver_service_ip`, `kubernetes.default.svc`): " +
				"it works only once kube-proxy or the CNI serves it, so a CNI configured with it cannot start. A MetalLB " +
				"VIP is such a Service too, so it is not used here. Unlike kubespray, which hands " +
				"`kube_apiserver_global_endpoint` (`localhost` in its default mode) to Calico and Cilium, kha hands " +
				"them an address pods reach.",
		},
		"cilium_values": schema.MapAttribute{
			Computed: true, ElementType: types.StringType,
			MarkdownDescription: "Cilium Helm values for `pod_network_endpoint`: `k8sServiceHost` (an IPv6 address without " +
				"brackets) and `k8sServicePort`, e.g. `values = [yamlencode(kha_cluster_endpoints.cluster.cilium_values)]` " +
				"or one `set` per key of a `helm_release`. Known at plan time. Cilium's agent and operator run in the host " +
				"network, where a node-local endpoint works too: without an external load balancer, where " +
				"`pod_network_endpoint` is one node, `kube_proxy_server`'s host and port (the node-local load balancer on " +
				"every node, as Talos recommends with KubePrism) survive that node's loss, for those components only.",
		},
		"calico_kubernetes_services_endpoint": schema.MapAttribute{
			Computed: true, ElementType: types.StringType,
			MarkdownDescription: "`data` of the `kubernetes-services-endpoint` ConfigMap in the `tigera-operator` namespace, " +
				"which the Tigera operator reads and hands to every Calico component: `KUBERNETES_SERVICE_HOST` (an IPv6 " +
				"address without brackets) and `KUBERNETES_SERVICE_PORT` of `pod_network_endpoint`. Known at plan time.",
		},
	}
}

// healthCheckAttributes are the health check a load balancer in front of
// the apiservers runs: its timing (an input) and the whole spec.
func healthCheckAttributes() map[string]schema.Attribute {
	return map[string]schema.Attribute{
		"lb_health_check": schema.SingleNestedAttribute{
			Optional: true,
			MarkdownDescription: "Timing of the health check of a load balancer in front of the apiservers that kha does " +
				"not render (a cloud load balancer, a hardware one): the values you give it, so the plan can check them " +
				"against `apiserver_shutdown_delay_duration`. The whole check is `health_check_spec`.",
			Attributes: map[string]schema.Attribute{
				"interval": schema.StringAttribute{Optional: true, Validators: []validator.String{durationValidator()},
					MarkdownDescription: "Time between checks, whole seconds. Default `5s`, the shortest AWS and Azure allow."},
				"timeout": schema.StringAttribute{Optional: true, Validators: []validator.String{durationValidator()},
					MarkdownDescription: "How long one check may take, whole seconds, at most `interval`. Default `2s`."},
				"healthy_threshold": schema.Int64Attribute{Optional: true, Validators: []validator.Int64{int64validator.Between(1, 10)},
					MarkdownDescription: "Passed checks before an apiserver is back in rotation. Default `2`."},
				"unhealthy_threshold": schema.Int64Attribute{Optional: true, Validators: []validator.Int64{int64validator.Between(1, 10)},
					MarkdownDescription: "Failed checks before an apiserver leaves rotation. Default `2`."},
			},
		},
		"lb_idle_timeout": schema.StringAttribute{
			Optional: true, Validators: []validator.String{durationValidator()},
			MarkdownDescription: "Idle timeout of a load balancer in front of the apiservers that kha does not render, e.g. " +
				"`350s`, an AWS Network Load Balancer's default. With `apiserver_min_request_timeout` set, the plan warns when " +
				"it is shorter: the load balancer would cut a quiet watch, `kubectl logs -f` or `exec` sooner than the " +
				"apiserver. Unset: not checked.",
		},
		"health_check_spec": schema.SingleNestedAttribute{
			Computed: true,
			MarkdownDescription: "The health check a cloud load balancer in front of the apiservers should run, in the terms " +
				"cloud load balancers take (e.g. an AWS target group's `health_check`, a GCP health check's " +
				"`https_health_check`, an Azure probe), known at plan time. `HTTPS` `GET /readyz` on the apiserver port, " +
				"expecting `200`, without verifying the certificate (cloud load balancers cannot use the cluster CA), with " +
				"`lb_health_check`'s timing. With `apiserver_anonymous_auth = false`, `/readyz` answers 401 to every check " +
				"and no cloud load balancer presents a client certificate, so the check is `TCP` and `path` null: it " +
				"notices only a closed port, not a stopping apiserver. Unlike kubespray's HAProxy, which checks `/healthz`, kha checks " +
				"`/readyz`, which fails as soon as an apiserver starts shutting down.",
			Attributes: map[string]schema.Attribute{
				"protocol":            schema.StringAttribute{Computed: true, MarkdownDescription: "`HTTPS`, or `TCP` (see above)."},
				"path":                schema.StringAttribute{Computed: true, MarkdownDescription: "`/readyz`; null with `TCP`."},
				"port":                schema.Int64Attribute{Computed: true, MarkdownDescription: "`apiserver_port`."},
				"interval_seconds":    schema.Int64Attribute{Computed: true, MarkdownDescription: "`lb_health_check.interval`, in seconds."},
				"timeout_seconds":     schema.Int64Attribute{Computed: true, MarkdownDescription: "`lb_health_check.timeout`, in seconds."},
				"healthy_threshold":   schema.Int64Attribute{Computed: true, MarkdownDescription: "`lb_health_check.healthy_threshold`."},
				"unhealthy_threshold": schema.Int64Attribute{Computed: true, MarkdownDescription: "`lb_health_check.unhealthy_threshold`."},
			},
		},
	}
}

// localLBAttribute is `local_lb`, the node-local load balancers.
func localLBAttribute() schema.SingleNestedAttribute {
	return schema.SingleNestedAttribute{
		Optional: true,
		MarkdownDescription: "Node-local apiserver load balancer on every node without kube-apiserver " +
			"(kubespray's `loadbalancer_apiserver_localhost`), or with `every_node` on every node. Enabled by " +
			"default unless `external_lb` is set.",
		Attributes: map[string]schema.Attribute{
			"enabled": schema.BoolAttribute{
				Optional: true,
				MarkdownDescription: "Run the node-local load balancer. Default: `true` without `external_lb`. " +
					"`false` without `external_lb` gives mode `direct`. `true` together with `external_lb` gives mode " +
					"`local_lb_with_unmanaged_lb`: nodes use their local load balancer and only external clients use " +
					"the external one. Unlike kubespray, which then sends every node to the external load balancer and " +
					"leaves the local one unused, kha keeps the nodes off the external one, so the cluster does not depend on it. " +
					"While it is off, `type`, `port` and `healthcheck_port` are ignored, and the plan warns when they are set.",
			},
			"every_node": schema.BoolAttribute{
				Optional: true,
				MarkdownDescription: "Run the load balancer on every node, control-plane nodes included, and have every " +
					"node (and kubeadm's `controlPlaneEndpoint`) use `localhost:<port>`: mode `local_lb_every_node`, " +
					"Epiphany's HAProxy-on-every-node design and what Talos calls KubePrism. No component then depends " +
					"on one apiserver or on an external load balancer. `port` must differ from `apiserver_port` unless " +
					"every control-plane node's apiserver binds its own address (the plan says so). Outside clients use " +
					"`external_lb` when set, else the first control-plane node.",
			},
			"type": schema.StringAttribute{
				Optional:   true,
				Validators: []validator.String{stringvalidator.OneOf(lbTypeValues...)},
				MarkdownDescription: fmt.Sprintf("Load balancer implementation (kubespray's `loadbalancer_apiserver_type`): `%s` or `%s`. Default `%s`.",
					endpoints.LBTypeNginx, endpoints.LBTypeHAProxy, endpoints.DefaultLocalLBType),
			},
			"port": schema.Int64Attribute{
				Optional:   true,
				Validators: portValidator,
				MarkdownDescription: "Port it listens on, on `127.0.0.1` (and `::1` with IPv6) " +
					"(kubespray's `loadbalancer_apiserver_port`). Default: `apiserver_port`.",
			},
			"healthcheck_port": schema.Int64Attribute{
				Optional:   true,
				Validators: portValidator,
				MarkdownDescription: "Port of the load balancer's own health endpoint, on all addresses " +
					"(kubespray's `loadbalancer_apiserver_healthcheck_port`). Unset: no health endpoint.",
			},
		},
	}
}

// externalLBAttribute is `external_lb`, a load balancer in front of every apiserver.
func externalLBAttribute() schema.SingleNestedAttribute {
	return schema.SingleNestedAttribute{
		Optional: true,
		MarkdownDescription: "A load balancer in front of every apiserver: a VIP (keepalived, kube-vip) or a cloud " +
			"load balancer (kubespray's `loadbalancer_apiserver` and `apiserver_loadbalancer_domain_name`). " +
			"Selects mode `external_lb`, or `local_lb_with_unmanaged_lb` with `local_lb.enabled = true`.",
		Attributes: map[string]schema.Attribute{
			"address": schema.StringAttribute{
				Required:            true,
				MarkdownDescription: "VIP or address of the load balancer (IP or DNS name) (kubespray's `loadbalancer_apiserver.address`).",
			},
			"port": schema.Int64Attribute{
				Optional:            true,
				Validators:          portValidator,
				MarkdownDescription: "Port of the load balancer (kubespray's `loadbalancer_apiserver.port`). Default: `apiserver_port`.",
			},
			"domain_name": schema.StringAttribute{
				Optional: true,
				MarkdownDescription: "Name clients use for the load balancer (kubespray's `apiserver_loadbalancer_domain_name`). " +
					"Default: `address`. When it is a DNS name and `address` an IP, `hosts_entries` carries the line that resolves it.",
			},
			"runs_on_control_plane": schema.BoolAttribute{
				Optional: true,
				MarkdownDescription: "Set when the load balancer process binds `address:port` on every control-plane node " +
					"(HAProxy plus keepalived there). The plan then fails if that socket collides with " +
					"kube-apiserver bound to every address on the same port. Default `false`.",
			},
			"control_plane_endpoint": schema.BoolAttribute{
				Optional: true,
				MarkdownDescription: "Make the load balancer (`domain_name`, else `address`, and `port`) kubeadm's " +
					"`controlPlaneEndpoint` and join discovery address (`kubeadm_control_plane_endpoint`, " +
					"`kubeadm_discovery_address`) in every mode, while the nodes keep their node-local load balancers: " +
					"kubeadm's own advice for an HA cluster, a stable name that `kubeadm init`, `admin.conf` and every join " +
					"keep when the first control-plane node drains or leaves. Choose it when the load balancer serves before " +
					"`kubeadm init` runs and every node reaches it (a VIP kha runs with keepalived, a cloud load balancer); " +
					"mode `external_lb` does this anyway. Default `false`: the first control-plane node's address, as " +
					"kubespray gives kubeadm when nodes have node-local load balancers, so clusters kubespray built keep " +
					"what their kubeadm-config says. Not with `metallb`, which the cluster itself runs.",
			},
			"nodes": schema.ListAttribute{
				Optional: true, ElementType: types.StringType,
				MarkdownDescription: "Names of the cluster nodes that run the load balancer or hold its VIP (the hosts of " +
					"`kha_haproxy_config` with `role = \"external\"` and of `kha_keepalived_config`); `[]` when it runs " +
					"elsewhere. The plan fails when one of them is a control-plane node whose kube-apiserver binds every " +
					"address on the same port (kubespray's VIP port trap); unset, the plan warns when the trap may be there.",
			},
			"metallb": metalLBAttribute(),
		},
	}
}

// kubeadmAttribute is `kubeadm`: what the kubeadm configuration needs besides the endpoints.
func kubeadmAttribute() schema.SingleNestedAttribute {
	return schema.SingleNestedAttribute{
		Optional:            true,
		MarkdownDescription: "What `kubeadm_cluster_configuration` needs besides the endpoints: the Kubernetes version and an external etcd.",
		Attributes: map[string]schema.Attribute{
			"kubernetes_version": schema.StringAttribute{Optional: true,
				Validators: []validator.String{stringvalidator.RegexMatches(regexp.MustCompile(`^v[0-9]+\.[0-9]+\.[0-9]+$`), `must be a Kubernetes release such as "v1.36.3"`)},
				MarkdownDescription: "`kubernetesVersion`, e.g. `v1.36.3`. Unset, kubeadm looks the latest release up on dl.k8s.io. " +
					"It also decides where control-plane kubelets point (`control_plane_kubelet_local_mode`): set it on a " +
					"cluster older than v1.33."},
			"control_plane_kubelet_local_mode": schema.BoolAttribute{Optional: true,
				MarkdownDescription: "Whether a control-plane node's kubelet talks to its own apiserver (`node_endpoints` of " +
					"control-plane nodes): kubeadm's `ControlPlaneKubeletLocalMode`, which keeps a kubelet upgraded first from " +
					"reaching an older apiserver through the load balancer. Default as kubeadm of `kubernetes_version` does: " +
					"`true` from v1.33 (and when `kubernetes_version` is unset: today's kubeadm), `false` before. Where the " +
					"value differs from that kubeadm's default, `kubeadm_cluster_configuration` sets the feature gate so " +
					"kubeadm writes the same (v1.31 to v1.35). `false` is refused from v1.36, where kubeadm has no gate and " +
					"`kubeadm upgrade` points the kubelet back at its own apiserver."},
			"etcd_endpoints": schema.ListAttribute{Optional: true, ElementType: types.StringType,
				MarkdownDescription: "etcd client URLs for `etcd.external.endpoints`, e.g. `kha_etcd_access.<name>.servers`; unset: stacked etcd."},
			"etcd_ca_file":   schema.StringAttribute{Optional: true, Validators: []validator.String{filePathValidator()}, MarkdownDescription: "`etcd.external.caFile`."},
			"etcd_cert_file": schema.StringAttribute{Optional: true, Validators: []validator.String{filePathValidator()}, MarkdownDescription: "`etcd.external.certFile`."},
			"etcd_key_file":  schema.StringAttribute{Optional: true, Validators: []validator.String{filePathValidator()}, MarkdownDescription: "`etcd.external.keyFile`."},
		},
	}
}

// clusterNetworkAttributes are the cluster's names and address ranges.
func clusterNetworkAttributes() map[string]schema.Attribute {
	return map[string]schema.Attribute{
		"supplementary_addresses": schema.ListAttribute{
			Optional: true, ElementType: types.StringType,
			MarkdownDescription: "Extra DNS names and IPs clients use to reach the apiservers, added to the certificate SANs " +
				"(kubespray's `supplementary_addresses_in_ssl_keys`). Put the VIP and name of a load balancer you " +
				"manage elsewhere here. A leading `*.` wildcard label is allowed.",
		},
		"dns_domain": schema.StringAttribute{
			Optional: true, Computed: true,
			Default: stringdefault.StaticString(endpoints.DefaultDNSDomain),
			MarkdownDescription: fmt.Sprintf("Cluster DNS domain (kubespray's `dns_domain`, kubeadm's `networking.dnsDomain`). "+
				"Default `%s`, both kubespray's and kubeadm's. With `existing_cert_sans`, a certificate whose "+
				"`kubernetes.default.svc.<domain>` names another domain fails the plan, naming it: the cluster was made with "+
				"that domain.", endpoints.DefaultDNSDomain),
		},
		"service_cidr": schema.StringAttribute{
			Optional: true, Computed: true,
			Default: stringdefault.StaticString(endpoints.DefaultServiceCIDR),
			MarkdownDescription: fmt.Sprintf("IPv4 service range (kubespray's `kube_service_addresses`, kubeadm's "+
				"`networking.serviceSubnet`). Its first address is the `kubernetes` Service's, which every apiserver "+
				"certificate has. Default `%s`, kubespray's; a cluster kubeadm made with its defaults has `10.96.0.0/12` "+
				"(Service address `10.96.0.1`): set that for one. With `existing_cert_sans`, a certificate that lacks this "+
				"range's Service address and has another range's first address fails the plan, naming it, so that neither "+
				"`kubeadm_cluster_configuration` nor `apiserver_cert_sans` contradicts the cluster.", endpoints.DefaultServiceCIDR),
		},
		"service_cidr_ipv6": schema.StringAttribute{
			Optional: true, Computed: true,
			Default: stringdefault.StaticString(endpoints.DefaultServiceCIDRIPv6),
			MarkdownDescription: fmt.Sprintf("IPv6 service range (kubespray's `kube_service_addresses_ipv6`). Default `%s`. "+
				"Used for the service IP when `ip_family` is `ipv6`.", endpoints.DefaultServiceCIDRIPv6),
		},
		"ip_family": schema.StringAttribute{
			Optional: true, Computed: true,
			Default:    stringdefault.StaticString(string(endpoints.IPv4)),
			Validators: []validator.String{stringvalidator.OneOf(ipFamilies...)},
			MarkdownDescription: "Address families: `ipv4` (default), `ipv6`, or `dual` (kubespray's `ipv4_stack` / " +
				"`ipv6_stack`). In `dual`, IPv4 is primary, as in kubespray, and the nodes' `ip6`/`access_ip6` are added " +
				"to the certificate. Unlike kubespray, which adds only the IPv6 address of the host's default route, kha adds " +
				"the addresses the inventory gives, because those are the ones clients dial.",
		},
	}
}

// existingCertSANsAttribute is `existing_cert_sans`, the certificate the endpoints must verify against.
func existingCertSANsAttribute() schema.SingleNestedAttribute {
	return schema.SingleNestedAttribute{
		Optional: true,
		MarkdownDescription: "SANs of an apiserver certificate that already exists. When set, the plan fails if any " +
			"endpoint of the matrix, backend address or supplementary address would not verify against it — the " +
			"`x509: certificate is valid for …, not …` failure after adding a load balancer, caught before apply. The " +
			"error lists every endpoint that would fail and the whole SAN set the certificate must have, the missing ones " +
			"marked. With both lists null there is no certificate yet and nothing is checked: " +
			"`kha_apiserver_certificate` with `allow_missing = true` gives that before the first apiserver runs.",
		Attributes: map[string]schema.Attribute{
			"dns_names":    schema.ListAttribute{Optional: true, ElementType: types.StringType, MarkdownDescription: "DNS SANs of the certificate."},
			"ip_addresses": schema.ListAttribute{Optional: true, ElementType: types.StringType, MarkdownDescription: "IP SANs of the certificate."},
		},
	}
}

// accessAttributes are computed: how every client reaches the apiservers.
func accessAttributes() map[string]schema.Attribute {
	return map[string]schema.Attribute{
		"id": schema.StringAttribute{
			Computed:            true,
			MarkdownDescription: "Digest of the computed matrix; it changes whenever any computed value changes.",
		},
		"mode": schema.StringAttribute{
			Computed: true,
			MarkdownDescription: "Access mode: `local_lb` (node-local load balancers on the nodes without apiserver), " +
				"`local_lb_every_node` (a node-local load balancer on every node, which every node uses), " +
				"`local_lb_with_unmanaged_lb` (node-local load balancers, plus an external one for clients outside the " +
				"cluster), `external_lb` (everyone through the external load balancer) or `direct` (everyone to the " +
				"first control-plane node).",
		},
		"lb_domain_name": schema.StringAttribute{
			Computed: true,
			MarkdownDescription: "kubespray's `apiserver_loadbalancer_domain_name`: `localhost` with node-local load balancers, " +
				"the external load balancer's name in `external_lb` mode, null in `direct` mode.",
		},
		"endpoints": endpointsAttribute(),
		"node_endpoints": schema.MapAttribute{
			Computed: true, ElementType: types.StringType,
			MarkdownDescription: "apiserver URL per node name, the `server` for each node's `kubelet.conf`. A worker's is " +
				"kubespray's per-host `kube_apiserver_endpoint`. A control-plane node's is its own apiserver as kubeadm writes " +
				"it since v1.33, `https://<ip>:<apiserver_port>` (its `bind_address` when it binds one), in every mode, so " +
				"a kubelet upgraded first never reaches an older apiserver: unlike kubespray's `kube_apiserver_endpoint`, " +
				"since kubespray leaves that node's `kubelet.conf` to kubeadm. With `kubeadm.control_plane_kubelet_local_mode` " +
				"false (the default before v1.33) it is `kube_apiserver_endpoint`: the external load balancer in `external_lb`, " +
				"`localhost` on the load balancer's port in `local_lb_every_node`, else `127.0.0.1`. Unlike kubespray, which " +
				"leaves a worker's `kubelet.conf` on kubeadm's join fallback (the first control-plane node's `ip`) in `direct` " +
				"mode, kha gives a worker that node's `access_ip` (its `ip` when unset): the address other hosts reach it at, " +
				"which the apiserver's SANs hold.",
		},
		"kube_proxy_server": schema.StringAttribute{
			Computed: true,
			MarkdownDescription: "`server:` of kube-proxy's kubeconfig (the `kube-proxy` ConfigMap in `kube-system`, one for " +
				"every node): `https://127.0.0.1:<local_lb.port>` with node-local load balancers (`https://[::1]:<local_lb.port>` " +
				"in an IPv6-only cluster: unlike kubespray, which writes `127.0.0.1` there too, because kube-proxy in an " +
				"IPv6-only cluster has no IPv4 loopback to speak from, and the load balancer listens on `::1`), the external load balancer in `external_lb` mode, kubeadm's value (the first " +
				"control-plane node) in `direct` mode. Unlike kubespray, which writes `kube_apiserver_port` here, the load " +
				"balancer's port is used: with a different `local_lb.port`, kubespray's value points kube-proxy on workers " +
				"at a port nothing listens on. Where kubespray leaves kubeadm's value (the first control-plane node) in " +
				"place, as when every node runs the load balancer, kha points kube-proxy at the node-local endpoint, so it " +
				"survives that node's loss as the kubelets do. When no value works on every node, the plan warns.",
		},
		"kubeconfig_server": schema.StringAttribute{
			Computed: true,
			MarkdownDescription: "`server:` of an admin kubeconfig used outside the cluster (kubespray's `kubeconfig_localhost`): " +
				"the external load balancer's address, else the first control-plane node's access address. It uses the " +
				"address, not the domain name, so it works without DNS.",
		},
		"apiserver_service_ip": schema.StringAttribute{
			Computed:            true,
			MarkdownDescription: "The `kubernetes` service IP: the first address of the primary family's service range (kubespray's `kube_apiserver_ip`).",
		},
	}
}

// nameOutputAttributes are computed: the names and addresses the certificate must hold, and
// the /etc/hosts lines that resolve them.
func nameOutputAttributes() map[string]schema.Attribute {
	return map[string]schema.Attribute{
		"apiserver_cert_sans": schema.SingleNestedAttribute{
			Computed: true,
			MarkdownDescription: "SANs the apiserver certificate needs (kubeadm `apiServer.certSANs`), in kubespray's " +
				"`apiserver_sans` order, with every control-plane node name on every node. Unlike kubespray, which " +
				"compares strings and lists `fd00::0001` and `fd00::1` twice, kha compares IP literals in canonical form, " +
				"so each address appears once and the list is the same whatever the spelling of the inputs.",
			Attributes: map[string]schema.Attribute{
				"dns_names":    schema.ListAttribute{Computed: true, ElementType: types.StringType, MarkdownDescription: "DNS SANs, lowercase."},
				"ip_addresses": schema.ListAttribute{Computed: true, ElementType: types.StringType, MarkdownDescription: "IP SANs, canonical form."},
			},
		},
		"hosts_entries": schema.ListAttribute{
			Computed: true, ElementType: types.StringType,
			MarkdownDescription: "`/etc/hosts` lines that resolve the external load balancer's name: `<address> <domain_name>` " +
				"when `external_lb` has a DNS name in front of an IP, in every mode that has one. Empty otherwise. Unlike " +
				"current kubespray, which writes none, kha offers the line kubespray wrote up to v2.28, for `kha_hosts_entries`.",
		},
	}
}

// kubeadmOutputAttributes are computed: kubeadm's settings and the MetalLB manifests.
func kubeadmOutputAttributes() map[string]schema.Attribute {
	return map[string]schema.Attribute{
		"kubeadm_control_plane_endpoint": schema.StringAttribute{
			Computed: true,
			MarkdownDescription: "kubeadm `ClusterConfiguration.controlPlaneEndpoint` (`host:port`): the external load balancer " +
				"in `external_lb` mode, `localhost:<local_lb.port>` in `local_lb_every_node`, else the first control-plane " +
				"node's `ip`. Unlike kubespray, which leaves an IPv6 load balancer address bare, IPv6 literals are " +
				"bracketed: kubeadm cannot parse them bare.",
		},
		"kubeadm_discovery_address": schema.StringAttribute{
			Computed: true,
			MarkdownDescription: "`host:port` that `kubeadm join` discovers the cluster at (`discovery.bootstrapToken.apiServerEndpoint`): " +
				"the external load balancer in `external_lb` mode, else the first control-plane node's access address. Unlike " +
				"kubespray, which derives it from the joining node's own endpoint, a control-plane node with a specific " +
				"`bind_address` joins through the first node rather than its own apiserver, which does not run yet. An IPv6 " +
				"address is bracketed (`[fd00::11]:6443`): kubespray writes it bare, which kubeadm cannot parse.",
		},
		"kubeadm_cluster_configuration": schema.StringAttribute{
			Computed: true,
			MarkdownDescription: "A kubeadm `ClusterConfiguration` (v1beta4) with what these endpoints decide: " +
				"`controlPlaneEndpoint`, `networking` (DNS domain, service subnets), `apiServer.certSANs` and, with " +
				"`kubeadm.etcd_endpoints`, `etcd.external`. YAML, known at plan time; merge it into your kubeadm config. " +
				"Its `networking` is `service_cidr` and `dns_domain`, whose defaults are kubespray's: a kubeadm cluster " +
				"has `serviceSubnet: 10.96.0.0/12` unless it was given another, so set `service_cidr` to what its " +
				"kubeadm-config says (`existing_cert_sans` makes a plan that contradicts the live certificate fail).",
		},
		"metallb_manifests": schema.StringAttribute{
			Computed: true,
			MarkdownDescription: "With `external_lb.metallb`, the Service of type LoadBalancer on the VIP (MetalLB's " +
				"`metallb.universe.tf/loadBalancerIPs` annotation) and its EndpointSlice, as YAML documents to apply with " +
				"your Kubernetes tooling. Null otherwise.",
		},
	}
}

// localLBOutputAttributes are computed: the node-local load balancers' inputs.
func localLBOutputAttributes() map[string]schema.Attribute {
	return map[string]schema.Attribute{
		"local_lb_type": schema.StringAttribute{
			Computed: true,
			MarkdownDescription: "Type of the node-local load balancer; null when no node runs one (no mode with a node-local " +
				"load balancer, or every node is a control-plane node answering on loopback).",
		},
		"local_lb_listen": schema.SingleNestedAttribute{
			Computed:            true,
			MarkdownDescription: "Where the node-local load balancer listens; null when no node runs one.",
			Attributes: map[string]schema.Attribute{
				"address":      schema.StringAttribute{Computed: true, MarkdownDescription: "`127.0.0.1`."},
				"ipv6_address": schema.StringAttribute{Computed: true, MarkdownDescription: "`::1` when the cluster has IPv6, else null."},
				"port":         schema.Int64Attribute{Computed: true, MarkdownDescription: "`local_lb.port`, default `apiserver_port`."},
			},
		},
		"local_lb_backends": apiserverBackendsAttribute("Deprecated: use `apiserver_backends`, which has the same value (it "+
			"feeds external load balancers too, not only node-local ones).",
			"local_lb_backends is apiserver_backends under its old name: it feeds external load balancers too. Use apiserver_backends."),
		"local_lb_fallback": schema.SingleNestedAttribute{
			Computed: true,
			MarkdownDescription: "The last resort of the node-local load balancers: the external load balancer, by the name " +
				"clients use (`external_lb.domain_name`, else its address), for their `fallback`. Null unless nodes run a " +
				"node-local load balancer beside an `external_lb`. Through it, a node that loses its direct routes to the " +
				"apiservers keeps an API path, as with Talos KubePrism. kubespray has no such tier.",
			Attributes: map[string]schema.Attribute{
				"address": schema.StringAttribute{Computed: true, MarkdownDescription: "IP address or DNS name."},
				"port":    schema.Int64Attribute{Computed: true, MarkdownDescription: "`external_lb.port`."},
			},
		},
		"local_lb_node_ips": schema.MapAttribute{
			Computed: true, ElementType: types.StringType,
			MarkdownDescription: "The nodes of `local_lb_nodes`, each to its address (`ip`, or `ip6` in an IPv6-only " +
				"cluster), known at plan time: `for_each = kha_cluster_endpoints.<name>.local_lb_node_ips` with " +
				"`ssh = { host = each.value }` configures every node-local load balancer without rebuilding the map " +
				"from the node lists. Empty when no node runs one.",
		},
		"local_lb_nodes": schema.ListAttribute{
			Computed: true, ElementType: types.StringType,
			MarkdownDescription: "Names of the nodes that run the node-local load balancer: every worker, and control-plane " +
				"nodes whose apiserver is bound to a specific address; every node in `local_lb_every_node`. Unlike kubespray, " +
				"which also installs it on control-plane nodes bound to `0.0.0.0`, where the apiserver already answers on " +
				"loopback, kha treats both wildcards alike.",
		},
	}
}

// metalLBAttribute is `external_lb.metallb`: the VIP announced by MetalLB.
func metalLBAttribute() schema.SingleNestedAttribute {
	return schema.SingleNestedAttribute{
		Optional: true,
		MarkdownDescription: "Announce `address` with MetalLB: `metallb_manifests` then holds a Service of type " +
			"LoadBalancer for it (and an EndpointSlice with the control-plane nodes), to apply with your Kubernetes " +
			"tooling. The VIP is a Service of the cluster itself, so it serves clients outside the cluster only: " +
			"nodes keep their node-local load balancer (mode `local_lb_with_unmanaged_lb`), because they must reach " +
			"the apiservers before the cluster runs and while it has trouble.",
		Attributes: map[string]schema.Attribute{
			"address_pool": schema.StringAttribute{Optional: true,
				MarkdownDescription: "MetalLB address pool to take `address` from (`metallb.universe.tf/address-pool`)."},
			"select_static_pods": schema.BoolAttribute{Optional: true,
				MarkdownDescription: "Select kubeadm's kube-apiserver static pods (`component: kube-apiserver`, " +
					"`tier: control-plane`) instead of listing the control-plane nodes in an EndpointSlice, so " +
					"kube-proxy follows the apiservers' readiness. Default `false` (the EndpointSlice works without " +
					"kubeadm's pods, but kube-proxy keeps sending to a dead apiserver)."},
		},
	}
}

// endpointsAttribute is `endpoints`, the apiserver URL of each role.
func endpointsAttribute() schema.SingleNestedAttribute {
	return schema.SingleNestedAttribute{
		Computed:            true,
		MarkdownDescription: "apiserver URL per role.",
		Attributes: map[string]schema.Attribute{
			"control_plane": schema.StringAttribute{Computed: true, MarkdownDescription: "What the first control-plane node uses " +
				"(kubespray's `kube_apiserver_endpoint` there): its own apiserver, or the external load balancer in `external_lb` mode."},
			"worker": schema.StringAttribute{Computed: true, MarkdownDescription: "What nodes without apiserver use: " +
				"`https://localhost:<local_lb port>`, the external load balancer, or the first control-plane node."},
			"global": schema.StringAttribute{Computed: true, MarkdownDescription: "The one endpoint for cluster-wide " +
				"consumers such as CNI configs (kubespray's `kube_apiserver_global_endpoint`)."},
			"external": schema.StringAttribute{Computed: true, MarkdownDescription: "What clients outside the cluster use: " +
				"the external load balancer by its domain name when there is one, else the first control-plane node's access address."},
		},
	}
}

// apiserverBackendsAttribute is the list of apiservers a load balancer
// forwards to: apiserver_backends, and local_lb_backends, its deprecated
// former name.
func apiserverBackendsAttribute(description, deprecation string) schema.ListNestedAttribute {
	return schema.ListNestedAttribute{
		Computed:            true,
		MarkdownDescription: description,
		DeprecationMessage:  deprecation,
		NestedObject: schema.NestedAttributeObject{Attributes: map[string]schema.Attribute{
			"name":    schema.StringAttribute{Computed: true, MarkdownDescription: "Node name."},
			"address": schema.StringAttribute{Computed: true, MarkdownDescription: "Access address, unbracketed."},
			"port":    schema.Int64Attribute{Computed: true, MarkdownDescription: "apiserver port."},
			"anonymous_auth": schema.BoolAttribute{Computed: true,
				MarkdownDescription: "`apiserver_anonymous_auth`, so the load balancer's health checks can be checked against it."},
			"shutdown_delay_duration": schema.StringAttribute{Computed: true,
				MarkdownDescription: "`apiserver_shutdown_delay_duration`, so the load balancer's health checks can be checked against it."},
			"min_request_timeout": schema.Int64Attribute{Computed: true,
				MarkdownDescription: "`apiserver_min_request_timeout`, so the load balancer's timeouts can be checked against it."},
		}},
	}
}

// nodeAttributes are the attributes of a node of either role.
func nodeAttributes(role string) map[string]schema.Attribute {
	attrs := map[string]schema.Attribute{
		"name": schema.StringAttribute{
			Required: true,
			MarkdownDescription: "Kubernetes node name (kubespray's `inventory_hostname` / `kube_override_hostname`). " +
				"Lowercase letters, digits, `-` and `.`. Unique across `control_plane_nodes` and `worker_nodes`.",
		},
		"ip": schema.StringAttribute{
			Optional: true,
			MarkdownDescription: "Address the node binds and advertises (kubespray's `ip`), an IP address: IPv4 when `ip_family` " +
				"is `ipv4` or `dual`. Required unless the cluster is IPv6-only and `ip6` is set. No node address (`ip`, " +
				"`access_ip`, `ip6`, `access_ip6`) may be a loopback, unspecified, multicast or broadcast one: the plan refuses " +
				"them, as no other host reaches a node there.",
		},
		"access_ip": schema.StringAttribute{
			Optional: true,
			MarkdownDescription: "Address other nodes and load balancers use to reach this node (kubespray's `access_ip`), " +
				"e.g. a NAT or public address: an IP address, as kubespray's. Defaults to `ip`.",
		},
		"ip6": schema.StringAttribute{
			Optional: true,
			MarkdownDescription: "IPv6 address of the node (kubespray's `ip6`): the second address of a dual-stack node, or " +
				"the node's address in an IPv6-only cluster (`ip_family = \"ipv6\"`), as kubespray inventories give it. " +
				"Ignored, with a warning, in an IPv4-only cluster, as kubespray ignores it.",
		},
		"access_ip6": schema.StringAttribute{
			Optional:            true,
			MarkdownDescription: "IPv6 access address (kubespray's `access_ip6`). Defaults to `ip6`.",
		},
		"hostname": schema.StringAttribute{
			Optional: true,
			MarkdownDescription: "The host's own short name (kubespray's `ansible_hostname`) when it differs from `name`; an " +
				"apiserver SAN for control-plane nodes, as in kubespray.",
		},
		"fqdn": schema.StringAttribute{
			Optional: true,
			MarkdownDescription: "The host's fully qualified name (kubespray's `ansible_fqdn`); an apiserver SAN for " +
				"control-plane nodes, as in kubespray, so clients that dial a control-plane node by its FQDN verify.",
		},
		"bind_address": schema.StringAttribute{
			Optional: true,
			MarkdownDescription: "kube-apiserver bind address of this control-plane node, overriding `apiserver_bind_address` " +
				"(kubespray's per-host `kube_apiserver_bind_address`). Must be the node's `ip`/`ip6` or a wildcard. " +
				"Not allowed on worker nodes.",
		},
	}
	attrs["draining"] = schema.BoolAttribute{
		Optional: true,
		MarkdownDescription: fmt.Sprintf("The first of the two applies that remove this control-plane node: it leaves "+
			"`apiserver_backends` (every load balancer fed from them stops sending it new connections; the processes a reload "+
			"replaces finish the open ones, HAProxy's within %d s (`hard-stop-after`), nginx's within %d s "+
			"(`worker_shutdown_timeout`)), the MetalLB EndpointSlice, and every other node's endpoint: where the first "+
			"control-plane node is the target (mode `direct`, `kubeadm_control_plane_endpoint`, `kubeadm_discovery_address`, "+
			"`kubeconfig_server`), the next node that is not draining takes its place. Its apiserver, etcd member and "+
			"certificate SANs stay, and its own kubelet keeps its endpoint. The plan warns with the list of what still "+
			"points at it; the second apply removes the node from `control_plane_nodes`. Filter draining nodes out of "+
			"`kha_kube_vip` so the node cannot hold the VIP. Default `false`; at least one control-plane node must not be "+
			"draining. See the guide \"Removing a control-plane node\".", endpoints.HAProxyDrainSeconds, endpoints.NginxDrainSeconds),
	}
	if role == "worker" {
		attrs["bind_address"] = schema.StringAttribute{
			Optional:            true,
			MarkdownDescription: "Not allowed on worker nodes (they run no kube-apiserver); present so both lists share one shape.",
		}
		attrs["draining"] = schema.BoolAttribute{
			Optional:            true,
			MarkdownDescription: "Not allowed on worker nodes (they are in no load balancer); present so both lists share one shape.",
		}
	}
	return attrs
}

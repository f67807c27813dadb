# A highly available control plane, end to end, on a running cluster:
# three control-plane nodes (stacked etcd), workers, and an external
# HAProxy pair holding a VIP with keepalived for clients outside the
# cluster. `access_mode` moves the cluster between kha's modes on a live
# cluster, in an order that never leaves a node without a working path to
# the apiservers:
#
#   direct      every node talks to an apiserver directly (workers to the
#               first control-plane node), as `kubeadm join` leaves them;
#   local_lb    workers go through a node-local load balancer, outside
#               clients through the VIP (kubespray's localhost mode);
#   every_node  every node, control-plane nodes included, goes through its
#               node-local load balancer on localhost (Epiphany's design,
#               Talos KubePrism), kubeadm's controlPlaneEndpoint too.
#
# In every mode a control-plane node's kubelet talks to its own apiserver,
# as kubeadm writes it since Kubernetes 1.33.
#
# A new load balancer name or control-plane node is one apply with `pki_dir`
# set: the apiserver certificates are re-issued node by node first, then the
# load balancers and the kubeconfigs follow, and with `admin_kubeconfig_path`
# the cluster's own copies of the endpoint last. A port or VIP that moves
# (`vip_port`, `vip`, `every_node_port`) is one apply too: the old address
# is served beside the new one until every client has moved.
#
# A control-plane node leaves in two applies: `draining = true` takes it out
# of every load balancer, then removing it from `control_plane_nodes` takes
# it out of everything else (docs/guides/removing-a-control-plane-node.md).
#
# Every endpoint and SAN below is known at plan time.

terraform {
  required_providers {
    kha = {
      source = "kha/kha"
    }
  }
}

provider "kha" {
  default_ssh = {
    user        = var.ssh_user
    sudo        = var.ssh_user != "root"
    private_key = file(var.ssh_private_key_file)
    known_hosts = file(var.ssh_known_hosts_file)
  }
}

locals {
  nodes    = concat(var.control_plane_nodes, var.worker_nodes)
  node_ips = { for n in local.nodes : n.name => n.ip }
  lb_type  = { for n in local.nodes : n.name => n.local_lb }
  has_vip  = var.access_mode != "direct"
  lb_nodes = local.has_vip ? { for n in var.lb_nodes : n.name => n } : {}
}

# The certificate the apiservers serve: the plan fails if an endpoint of the
# configuration would not verify against it (a new node, a new LB name).
data "kha_apiserver_certificate" "live" {
  count = var.apiserver_certificate_path == null || var.pki_dir != null ? 0 : 1
  ssh   = { host = var.control_plane_nodes[0].ip }
  path  = var.apiserver_certificate_path
}

resource "kha_cluster_endpoints" "cluster" {
  # A draining node leaves every load balancer; its apiserver, etcd member
  # and SANs stay until a second apply removes it from the list.
  control_plane_nodes = [for n in var.control_plane_nodes : { name = n.name, ip = n.ip, draining = n.draining }]
  worker_nodes        = [for n in var.worker_nodes : { name = n.name, ip = n.ip }]

  local_lb = {
    enabled    = var.access_mode != "direct"
    every_node = var.access_mode == "every_node"
    port       = var.access_mode == "every_node" ? var.every_node_port : null
  }
  external_lb = local.has_vip ? {
    address     = var.vip
    port        = var.vip_port
    domain_name = var.api_domain_name
    nodes       = [for n in var.lb_nodes : n.name] # the VIP's hosts, for the port trap check
  } : null
  supplementary_addresses = var.extra_cert_sans
  kubeadm = {
    kubernetes_version = var.kubernetes_version
    etcd_endpoints     = kha_etcd_access.etcd.servers
    etcd_ca_file       = "/etc/ssl/etcd/ssl/ca.pem"
  }
  existing_cert_sans = length(data.kha_apiserver_certificate.live) == 0 ? null : {
    dns_names    = data.kha_apiserver_certificate.live[0].dns_names
    ip_addresses = data.kha_apiserver_certificate.live[0].ip_addresses
  }
}

# With pki_dir: every control-plane node's serving certificate gets the
# plan's SANs, on the node with kubeadm's CA key, one node at a time, each
# served and verified before the next; the load balancers wait for them.
resource "kha_apiserver_serving_certificate" "cp" {
  for_each = var.pki_dir == null ? {} : { for n in var.control_plane_nodes : n.name => n.ip }

  sans                = kha_cluster_endpoints.cluster.apiserver_cert_sans
  certificate_path    = "${var.pki_dir}/apiserver.crt"
  key_path            = "${var.pki_dir}/apiserver.key"
  ca_certificate_path = "${var.pki_dir}/ca.crt"
  ca_key_path         = "${var.pki_dir}/ca.key"
  renew_before        = var.certificate_renew_before
  validity            = var.certificate_validity
  # The node's own address: a new node is not behind any load balancer yet.
  verify_endpoints = ["https://${each.value}:6443"]
  ssh              = { host = each.value }
}

# Every node resolves the API name without DNS: the node-local load
# balancers fall back to the VIP by that name when no apiserver is reachable.
resource "kha_hosts_entries" "api" {
  for_each = length(kha_cluster_endpoints.cluster.hosts_entries) > 0 ? local.node_ips : {}

  entries = kha_cluster_endpoints.cluster.hosts_entries
  path    = var.hosts_file
  ssh     = { host = each.value }
}

# Node-local load balancers, HAProxy or nginx per node. Each new config
# runs in a throwaway instance before it replaces the live one, and the
# live one is verified after the reload.
resource "kha_haproxy_config" "node_local" {
  for_each = toset([for n in kha_cluster_endpoints.cluster.local_lb_nodes : n if local.lb_type[n] == "haproxy"])

  listen          = kha_cluster_endpoints.cluster.local_lb_listen
  backends        = kha_cluster_endpoints.cluster.apiserver_backends
  fallback        = kha_cluster_endpoints.cluster.local_lb_fallback
  health_check    = { ca_file = var.ca_file }
  config_path     = "${var.config_dir}/haproxy-local.cfg"
  pid_file        = "${var.config_dir}/haproxy-local.pid"
  stats_socket    = "${var.config_dir}/haproxy-local.sock"
  reload_command  = var.commands.haproxy_local_reload
  destroy_command = var.commands.haproxy_local_stop
  handover        = true # a new port serves beside the old until kha_handover.moved
  ssh             = { host = local.node_ips[each.key] }

  # The fallback's name resolves when the LB starts; the apiservers it
  # forwards to serve certificates with every name of the plan.
  depends_on = [kha_hosts_entries.api, kha_apiserver_serving_certificate.cp]

  # Removed only after what depends on it (the kubeconfigs) has moved away.
  lifecycle {
    create_before_destroy = true
  }
}

resource "kha_nginx_config" "node_local" {
  for_each = toset([for n in kha_cluster_endpoints.cluster.local_lb_nodes : n if local.lb_type[n] == "nginx"])

  listen          = kha_cluster_endpoints.cluster.local_lb_listen
  backends        = kha_cluster_endpoints.cluster.apiserver_backends
  fallback        = kha_cluster_endpoints.cluster.local_lb_fallback
  config_path     = "${var.config_dir}/nginx.conf"
  pid_file        = "${var.config_dir}/nginx.pid"
  reload_command  = var.commands.nginx_reload
  destroy_command = var.commands.nginx_stop
  handover        = true
  ssh             = { host = local.node_ips[each.key] }

  # nginx refuses to start on a name it cannot resolve; the apiservers it
  # forwards to serve certificates with every name of the plan.
  depends_on = [kha_hosts_entries.api, kha_apiserver_serving_certificate.cp]

  # Removed only after what depends on it (the kubeconfigs) has moved away.
  lifecycle {
    create_before_destroy = true
  }
}

# The external load balancer pair on the VIP, and keepalived moving the VIP
# to whichever node's HAProxy is healthy.
resource "kha_haproxy_config" "vip" {
  for_each = local.lb_nodes

  role             = "external"
  listen           = { address = var.vip, port = var.vip_port }
  backends         = kha_cluster_endpoints.cluster.apiserver_backends
  healthcheck_port = var.lb_healthcheck_port
  health_check     = { ca_file = var.ca_file }
  proxy_timeouts   = { client = "1h", server = "1h" }
  config_path      = "${var.config_dir}/haproxy-vip.cfg"
  pid_file         = "${var.config_dir}/haproxy-vip.pid"
  stats_socket     = "${var.config_dir}/haproxy-vip.sock"
  reload_command   = var.commands.haproxy_vip_reload
  destroy_command  = var.commands.haproxy_vip_stop
  handover         = true
  ssh              = { host = each.value.ip }

  depends_on = [kha_apiserver_serving_certificate.cp]
}

resource "kha_keepalived_config" "vip" {
  for_each = local.lb_nodes

  node              = each.key
  nodes             = var.lb_nodes
  vip               = var.vip
  vip_prefix        = var.vip_prefix
  interface         = var.lb_interface
  virtual_router_id = 77
  healthcheck_port  = var.lb_healthcheck_port
  track_script_path = "${var.config_dir}/keepalived-track.sh"
  config_path       = "${var.config_dir}/keepalived.conf"
  reload_command    = var.commands.keepalived_reload
  destroy_command   = var.commands.keepalived_stop
  handover          = true
  ssh               = { host = each.value.ip }

  depends_on = [kha_haproxy_config.vip]

  # Removed only after what depends on it (the kubeconfigs) has moved away.
  lifecycle {
    create_before_destroy = true
  }
}

# Every node's kubeconfigs point at its endpoint, each change proven with
# the kubeconfig's own credentials before it is made. depends_on puts the
# load balancers first when a node moves to one, and the kubeconfigs first
# (away from it) when a node moves off one: Terraform updates a resource
# before it destroys what that resource depends on. The hosts entries too:
# destroy puts the kubeconfigs back before the names go.
resource "kha_kubeconfig_server" "node" {
  for_each = local.node_ips

  paths           = var.kubeconfig_paths
  server          = kha_cluster_endpoints.cluster.node_endpoints[each.key]
  restart_command = var.commands.kubelet_restart
  ssh             = { host = each.value }

  depends_on = [kha_hosts_entries.api, kha_haproxy_config.node_local, kha_nginx_config.node_local, kha_keepalived_config.vip]
}

# Kubeconfigs for clients outside the cluster on the first control-plane
# node (kubeadm's admin.conf on a cluster with a VIP) name the external
# endpoint.
resource "kha_kubeconfig_server" "external" {
  for_each = local.has_vip && length(var.external_kubeconfig_paths) > 0 ? { (var.control_plane_nodes[0].name) = var.control_plane_nodes[0].ip } : {}

  paths  = var.external_kubeconfig_paths
  server = kha_cluster_endpoints.cluster.kubeconfig_server
  ssh    = { host = each.value }

  depends_on = [kha_hosts_entries.api, kha_keepalived_config.vip]
}

# With admin_kubeconfig_path: the cluster's own copies of the endpoint, once
# every node has moved. A joining node has no load balancer yet, so
# cluster-info (what `kubeadm join` discovers) names the endpoint outside
# clients use.
resource "kha_endpoint_configmaps" "cluster" {
  count = var.admin_kubeconfig_path == null ? 0 : 1

  admin_kubeconfig_path  = var.admin_kubeconfig_path
  control_plane_endpoint = kha_cluster_endpoints.cluster.kubeadm_control_plane_endpoint
  cert_sans = concat(kha_cluster_endpoints.cluster.apiserver_cert_sans.dns_names,
  kha_cluster_endpoints.cluster.apiserver_cert_sans.ip_addresses)
  cluster_info_server = kha_cluster_endpoints.cluster.kubeconfig_server
  kube_proxy_server   = kha_cluster_endpoints.cluster.kube_proxy_server
  ssh                 = { host = var.control_plane_nodes[0].ip }

  depends_on = [kha_kubeconfig_server.node, kha_kubeconfig_server.external]
}

# A port or VIP address that moves (vip_port, vip, every_node_port) is one
# apply: each load balancer and keepalived (handover = true) serves the
# previous address beside the new one until every kubeconfig and the
# cluster's copies have moved; then these drop it.
locals {
  handovers = merge(
    { for k, r in kha_haproxy_config.node_local : "${k}/node-local" => { id = r.id, handover_sha256 = r.handover_sha256, host = local.node_ips[k] } },
    { for k, r in kha_nginx_config.node_local : "${k}/node-local" => { id = r.id, handover_sha256 = r.handover_sha256, host = local.node_ips[k] } },
    { for k, r in kha_haproxy_config.vip : "${k}/vip" => { id = r.id, handover_sha256 = r.handover_sha256, host = local.lb_nodes[k].ip } },
    { for k, r in kha_keepalived_config.vip : "${k}/keepalived" => { id = r.id, handover_sha256 = r.handover_sha256, host = local.lb_nodes[k].ip } },
  )
}

resource "kha_handover" "moved" {
  for_each = local.handovers

  target_id     = each.value.id
  target_sha256 = each.value.handover_sha256
  ssh           = { host = each.value.host }

  # The API name's record (dns.tf) names the new address first.
  depends_on = [kha_kubeconfig_server.node, kha_kubeconfig_server.external, kha_endpoint_configmaps.cluster, terraform_data.api_record]
}

# etcd: every apiserver gets every member.
resource "kha_etcd_access" "etcd" {
  members = [for n in var.control_plane_nodes : { name = n.name, ip = n.ip }]
}

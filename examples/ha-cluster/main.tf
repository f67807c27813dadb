# A highly available control plane, end to end: three control-plane nodes
# (stacked etcd), workers reaching the apiservers through node-local load
# balancers, and an external HAProxy pair holding a VIP with keepalived for
# clients outside the cluster. Every value below is known at plan time.

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

resource "kha_cluster_endpoints" "cluster" {
  control_plane_nodes = var.control_plane_nodes
  worker_nodes        = [for w in var.worker_nodes : { name = w.name, ip = w.ip }]

  local_lb = { enabled = true }
  external_lb = {
    address     = var.vip
    port        = var.vip_port
    domain_name = var.api_domain_name
  }
  supplementary_addresses = var.extra_cert_sans
}

# Node-local load balancers: HAProxy or nginx per worker.
resource "kha_haproxy_config" "node_local" {
  for_each = { for w in var.worker_nodes : w.name => w if w.local_lb == "haproxy" }

  listen          = kha_cluster_endpoints.cluster.local_lb_listen
  backends        = kha_cluster_endpoints.cluster.local_lb_backends
  health_check    = { ca_file = var.ca_file }
  config_path     = "${var.config_dir}/haproxy-local.cfg"
  pid_file        = "${var.config_dir}/haproxy-local.pid"
  stats_socket    = "${var.config_dir}/haproxy-local.sock"
  reload_command  = var.commands.haproxy_local_reload
  destroy_command = var.commands.haproxy_local_stop
  ssh             = { host = each.value.ip }
}

resource "kha_nginx_config" "node_local" {
  for_each = { for w in var.worker_nodes : w.name => w if w.local_lb == "nginx" }

  listen          = kha_cluster_endpoints.cluster.local_lb_listen
  backends        = kha_cluster_endpoints.cluster.local_lb_backends
  config_path     = "${var.config_dir}/nginx.conf"
  pid_file        = "${var.config_dir}/nginx.pid"
  reload_command  = var.commands.nginx_reload
  destroy_command = var.commands.nginx_stop
  ssh             = { host = each.value.ip }
}

# The external load balancer pair on the VIP, and keepalived moving the VIP
# to whichever node's HAProxy is healthy.
resource "kha_haproxy_config" "vip" {
  for_each = { for n in var.lb_nodes : n.name => n }

  role             = "external"
  listen           = { address = var.vip, port = var.vip_port }
  backends         = kha_cluster_endpoints.cluster.local_lb_backends
  healthcheck_port = var.lb_healthcheck_port
  health_check     = { ca_file = var.ca_file }
  client_timeout   = "1h"
  server_timeout   = "1h"
  config_path      = "${var.config_dir}/haproxy-vip.cfg"
  pid_file         = "${var.config_dir}/haproxy-vip.pid"
  reload_command   = var.commands.haproxy_vip_reload
  destroy_command  = var.commands.haproxy_vip_stop
  ssh              = { host = each.value.ip }
}

resource "kha_keepalived_config" "vip" {
  for_each = { for n in var.lb_nodes : n.name => n }

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
  ssh               = { host = each.value.ip }

  depends_on = [kha_haproxy_config.vip]
}

# Every node resolves the API name to the VIP without DNS.
resource "kha_hosts_entries" "api" {
  for_each = { for n in concat(var.control_plane_nodes, var.worker_nodes) : n.name => n.ip }

  entries = distinct(concat(kha_cluster_endpoints.cluster.hosts_entries, ["${var.vip} ${var.api_domain_name}"]))
  path    = var.hosts_file
  ssh     = { host = each.value }
}

# etcd: every apiserver gets every member.
resource "kha_etcd_access" "etcd" {
  members = [for n in var.control_plane_nodes : { name = n.name, ip = n.ip }]
}

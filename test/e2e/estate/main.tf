# The estate end-to-end test's configuration (test/e2e/estate.sh): a
# cluster whose hosts only a bastion reaches, kha logged in as a non-root
# user with sudo, and Debian's stock haproxy.cfg and nginx.conf and
# kubeadm's leftovers on the hosts before the first apply.
#
#   workers    node-local load balancers at the distro's own paths (HAProxy
#              on w1, nginx on w2), and on w1 an external HAProxy beside its
#              node-local one for clients outside the cluster;
#   every node the API name in /etc/hosts, kubelet.conf pointed at its
#              endpoint, and (adopt_kubeadm_ca) kubeadm's CA file adopted by
#              import.
#
# `hosts` names the nodes whose hosts kha manages: a node whose host died
# leaves it (and `control_plane_nodes`), its resources let go of first.

terraform {
  required_providers {
    kha = {
      source = "kha/kha"
    }
  }
}

variable "control_plane_nodes" {
  type = list(object({ name = string, ip = string }))
}

variable "worker_nodes" {
  type = list(object({ name = string, ip = string, local_lb = string }))
}

variable "hosts" {
  description = "Name => address of every node whose host kha manages."
  type        = map(string)
}

variable "external_lb_node" {
  description = "The worker whose external HAProxy serves clients outside the cluster, beside its node-local one."
  type        = object({ name = string, ip = string })
}

variable "bastion" {
  description = "The only host Terraform's machine reaches; every connection goes through it."
  type        = string
}

variable "ssh_user" {
  type = string
}

variable "ssh_private_key_file" {
  type = string
}

variable "ssh_known_hosts_file" {
  description = "known_hosts with the bastion's and every node's keys."
  type        = string
}

variable "adopt_kubeadm_ca" {
  description = "Adopt kubeadm's /etc/kubernetes/pki/ca.crt on every host as a kha_file, by import."
  type        = bool
  default     = false
}

variable "allow_quorum_risk" {
  description = "Lets the plan take a control-plane node away although fewer than three would then run etcd (a dead node removed before its replacement joins)."
  type        = bool
  default     = false
}

variable "ca_file" {
  description = "The cluster CA on Terraform's machine: what kubeadm's ca.crt on the hosts holds."
  type        = string
}

variable "commands" {
  description = "How the hosts start, reload and stop each daemon (no init system runs there)."
  type = object({
    haproxy_local_reload    = string
    haproxy_local_stop      = string
    haproxy_external_reload = string
    haproxy_external_stop   = string
    nginx_reload            = string
    nginx_stop              = string
    kubelet_restart         = string
  })
}

provider "kha" {
  default_ssh = {
    user         = var.ssh_user
    sudo         = true
    private_key  = file(var.ssh_private_key_file)
    known_hosts  = file(var.ssh_known_hosts_file) # the bastion's key is verified with it too
    bastion_host = var.bastion
  }
}

locals {
  lb_type = { for n in var.worker_nodes : n.name => n.local_lb }
}

resource "kha_cluster_endpoints" "cluster" {
  control_plane_nodes = var.control_plane_nodes
  allow_quorum_risk   = var.allow_quorum_risk
  worker_nodes        = [for n in var.worker_nodes : { name = n.name, ip = n.ip }]

  local_lb = { enabled = true }
  external_lb = {
    address     = var.external_lb_node.ip
    port        = 8443
    domain_name = "api.estate.example"
    nodes       = [var.external_lb_node.name]
  }
}

resource "kha_hosts_entries" "api" {
  for_each = var.hosts

  entries = kha_cluster_endpoints.cluster.hosts_entries
  ssh     = { host = each.value }
}

# Node-local load balancers at the distro's default paths, in place of the
# stock files.
resource "kha_haproxy_config" "node_local" {
  for_each = toset([for n in kha_cluster_endpoints.cluster.local_lb_nodes : n if local.lb_type[n] == "haproxy"])

  listen          = kha_cluster_endpoints.cluster.local_lb_listen
  backends        = kha_cluster_endpoints.cluster.apiserver_backends
  fallback        = kha_cluster_endpoints.cluster.local_lb_fallback
  health_check    = { ca_file = "/etc/kubernetes/pki/ca.crt" }
  config_path     = "/etc/haproxy/haproxy.cfg"
  pid_file        = "/run/haproxy.pid"
  stats_socket    = "/run/haproxy/admin.sock"
  monitoring      = { logs = false }
  reload_command  = var.commands.haproxy_local_reload
  destroy_command = var.commands.haproxy_local_stop
  ssh             = { host = var.hosts[each.key] }

  depends_on = [kha_hosts_entries.api]
}

resource "kha_nginx_config" "node_local" {
  for_each = toset([for n in kha_cluster_endpoints.cluster.local_lb_nodes : n if local.lb_type[n] == "nginx"])

  listen          = kha_cluster_endpoints.cluster.local_lb_listen
  backends        = kha_cluster_endpoints.cluster.apiserver_backends
  fallback        = kha_cluster_endpoints.cluster.local_lb_fallback
  config_path     = "/etc/nginx/nginx.conf"
  pid_file        = "/run/nginx.pid"
  reload_command  = var.commands.nginx_reload
  destroy_command = var.commands.nginx_stop
  ssh             = { host = var.hosts[each.key] }

  depends_on = [kha_hosts_entries.api] # nginx refuses to start on a name it cannot resolve
}

# The external HAProxy on the same worker as its node-local one: a path,
# pid file and stats socket of its own, so the two never share a file.
resource "kha_haproxy_config" "external" {
  role            = "external"
  listen          = { address = var.external_lb_node.ip, port = 8443 }
  backends        = kha_cluster_endpoints.cluster.apiserver_backends
  health_check    = { ca_file = "/etc/kubernetes/pki/ca.crt" }
  config_path     = "/etc/haproxy/haproxy-external.cfg"
  pid_file        = "/run/haproxy-external.pid"
  stats_socket    = "/run/haproxy/external.sock"
  monitoring      = { logs = false }
  reload_command  = var.commands.haproxy_external_reload
  destroy_command = var.commands.haproxy_external_stop
  ssh             = { host = var.external_lb_node.ip }
}

resource "kha_kubeconfig_server" "node" {
  for_each = var.hosts

  paths           = ["/etc/kubernetes/kubelet.conf"]
  server          = kha_cluster_endpoints.cluster.node_endpoints[each.key]
  restart_command = var.commands.kubelet_restart
  ssh             = { host = each.value }

  depends_on = [kha_haproxy_config.node_local, kha_nginx_config.node_local]
}

# kubeadm's CA file, adopted as it is: the import records what the host
# has, and the configuration says the same.
import {
  for_each = var.adopt_kubeadm_ca ? var.hosts : {}
  to       = kha_file.kubeadm_ca[each.key]
  id       = "${each.value}:22:/etc/kubernetes/pki/ca.crt"
}

resource "kha_file" "kubeadm_ca" {
  for_each = var.adopt_kubeadm_ca ? var.hosts : {}

  path    = "/etc/kubernetes/pki/ca.crt"
  content = file(var.ca_file)
  mode    = "0644"
  owner   = "root"
  group   = "root"
  ssh     = { host = each.value }
}

output "node_endpoints" {
  value = kha_cluster_endpoints.cluster.node_endpoints
}

output "apiserver_cert_sans" {
  value = kha_cluster_endpoints.cluster.apiserver_cert_sans
}

output "apiserver_backends" {
  value = kha_cluster_endpoints.cluster.apiserver_backends
}

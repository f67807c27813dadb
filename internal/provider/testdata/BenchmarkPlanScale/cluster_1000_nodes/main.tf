terraform {
  required_providers {
    kha = { source = "kha/kha" }
  }
}

# A 1,000-node cluster's whole configuration: the endpoints of 3
# control-plane nodes and 997 workers, and on each worker a node-local
# HAProxy, its /etc/hosts block and its kubelet.conf pointed at it
# (3,000 host resources). Each worker's files live in its own directory
# (nodes[*].dir) on one of the benchmark's sshd hosts (nodes[*].port).
# kha_kubeconfig_server edits a file that is on the node, so it always
# goes to the host; with deliver = false the other two only render.
variable "nodes" {
  type = map(object({ port = number, dir = string }))
}
variable "deliver" {
  type = bool
}

provider "kha" {
  default_ssh = {
    host        = "127.0.0.1"
    user        = "kha-test"
    private_key = file("${path.module}/client_key")
    known_hosts = file("${path.module}/known_hosts")
  }
}

resource "kha_cluster_endpoints" "scale" {
  control_plane_nodes = [for i in range(3) : { name = "cp${i}", ip = "10.0.0.${i + 1}" }]
  worker_addresses    = { for i in range(997) : format("w%03d", i) => format("10.1.%d.%d", floor(i / 250), 1 + i % 250) }
  local_lb            = { type = "haproxy" }
}

resource "kha_haproxy_config" "worker" {
  for_each            = kha_cluster_endpoints.scale.local_lb_node_ips
  listen              = kha_cluster_endpoints.scale.local_lb_listen
  backends            = kha_cluster_endpoints.scale.apiserver_backends
  health_check        = { type = "tcp" }
  config_path         = "${var.nodes[each.key].dir}/haproxy.cfg"
  validate_command    = "/usr/sbin/haproxy -c -q -f %s"
  reload_command      = ""
  destroy_command     = ""
  verify_after_reload = false
  ssh                 = var.deliver ? { port = var.nodes[each.key].port } : null
}

resource "kha_hosts_entries" "worker" {
  for_each = kha_cluster_endpoints.scale.local_lb_node_ips
  entries  = concat(kha_cluster_endpoints.scale.hosts_entries, ["${each.value} ${each.key}"])
  path     = "${var.nodes[each.key].dir}/hosts"
  ssh      = var.deliver ? { port = var.nodes[each.key].port } : null
}

resource "kha_kubeconfig_server" "worker" {
  for_each        = kha_cluster_endpoints.scale.local_lb_node_ips
  paths           = ["${var.nodes[each.key].dir}/kubelet.conf"]
  server          = kha_cluster_endpoints.scale.node_endpoints[each.key]
  verify          = false
  restart_command = ""
  ssh             = { port = var.nodes[each.key].port }
}

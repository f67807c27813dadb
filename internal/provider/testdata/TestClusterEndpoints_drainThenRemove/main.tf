# The two applies that remove cp1, the first control-plane node. First
# (removed = false) it drains: it leaves the load balancers, and the
# workers, kubeadm and outside clients move to cp2, while its apiserver,
# etcd member and SANs stay. Then (removed = true) it is gone from
# control_plane_nodes, and nothing points at it.
variable "removed" { type = bool }

locals {
  cp1     = var.removed ? [] : [{ name = "cp1", ip = "10.0.0.11", draining = true }]
  serving = [for n in kha_cluster_endpoints.test.control_plane_nodes : n.name if !coalesce(n.draining, false)]
}

resource "kha_cluster_endpoints" "test" {
  control_plane_nodes = concat(local.cp1, [{ name = "cp2", ip = "10.0.0.12" }, { name = "cp3", ip = "10.0.0.13" }])
  worker_nodes        = [{ name = "w1", ip = "10.0.0.21" }]
  local_lb            = { type = "haproxy" }
  kubeadm             = { etcd_endpoints = [for n in concat(local.cp1, [{ ip = "10.0.0.12" }, { ip = "10.0.0.13" }]) : "https://${n.ip}:2379"] }
}

resource "kha_haproxy_config" "w1" {
  listen       = kha_cluster_endpoints.test.local_lb_listen
  backends     = kha_cluster_endpoints.test.apiserver_backends
  health_check = { ca_file = "/etc/kubernetes/pki/ca.crt" }
}

# kube-vip on the nodes that serve only: a draining node cannot hold the VIP.
resource "kha_kube_vip" "cp" {
  count     = length(local.serving)
  node_name = local.serving[count.index]
  address   = "10.0.0.100"
}

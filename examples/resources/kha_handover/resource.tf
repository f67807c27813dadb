resource "kha_cluster_endpoints" "cluster" {
  control_plane_nodes = [
    { name = "cp1", ip = "10.0.0.11" },
    { name = "cp2", ip = "10.0.0.12" },
    { name = "cp3", ip = "10.0.0.13" },
  ]
  worker_nodes = [for i in range(1, 4) : { name = "w${i}", ip = "10.0.0.2${i}" }]
  # Moving the node-local load balancers' port (say from 6443) is one apply.
  local_lb = { port = 7445 }
}

# Each node-local load balancer serves a new port beside the old one...
resource "kha_nginx_config" "worker" {
  for_each = kha_cluster_endpoints.cluster.local_lb_node_ips # name => ip

  listen   = kha_cluster_endpoints.cluster.local_lb_listen
  backends = kha_cluster_endpoints.cluster.apiserver_backends
  handover = true
  ssh      = { host = each.value }
}

# ...while every worker's kubelet moves to the new port...
resource "kha_kubeconfig_server" "worker" {
  for_each = kha_cluster_endpoints.cluster.local_lb_node_ips

  paths  = ["/etc/kubernetes/kubelet.conf"]
  server = kha_cluster_endpoints.cluster.node_endpoints[each.key]
  ssh    = { host = each.value }

  depends_on = [kha_nginx_config.worker]
}

# ...and then the old port goes.
resource "kha_handover" "worker" {
  for_each = kha_cluster_endpoints.cluster.local_lb_node_ips

  target_id     = kha_nginx_config.worker[each.key].id
  target_sha256 = kha_nginx_config.worker[each.key].handover_sha256
  ssh           = { host = each.value }

  depends_on = [kha_kubeconfig_server.worker]
}

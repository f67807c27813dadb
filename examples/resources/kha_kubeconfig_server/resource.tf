resource "kha_cluster_endpoints" "cluster" {
  control_plane_nodes = [
    { name = "cp1", ip = "10.0.0.11" },
    { name = "cp2", ip = "10.0.0.12" },
    { name = "cp3", ip = "10.0.0.13" },
  ]
  worker_nodes = [for i in range(1, 4) : { name = "w${i}", ip = "10.0.0.2${i}" }]
}

# The node-local load balancer first; it is verified before it counts as created.
resource "kha_nginx_config" "worker" {
  for_each = kha_cluster_endpoints.cluster.local_lb_node_ips # name => ip

  listen   = kha_cluster_endpoints.cluster.local_lb_listen
  backends = kha_cluster_endpoints.cluster.apiserver_backends
  ssh      = { host = each.value }
}

# Then every worker's kubelet moves to it, proven with the kubelet's own credentials
# before the swap, and restarted.
resource "kha_kubeconfig_server" "worker" {
  for_each = { for n in kha_cluster_endpoints.cluster.worker_nodes : n.name => n.ip }

  paths  = ["/etc/kubernetes/kubelet.conf"]
  server = kha_cluster_endpoints.cluster.node_endpoints[each.key]
  ssh    = { host = each.value, user = "admin", sudo = true }
  # Where the node-local load balancer falls back to one that routes by SNI:
  # tls_server_name = kha_cluster_endpoints.cluster.lb_domain_name

  depends_on = [kha_nginx_config.worker]
}

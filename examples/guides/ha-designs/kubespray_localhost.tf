# kubespray's default: workers through a node-local load balancer on
# localhost, control-plane nodes to their own apiserver on loopback.
resource "kha_cluster_endpoints" "localhost" {
  control_plane_nodes = [for i in [1, 2, 3] : { name = "cp${i}", ip = "10.0.0.1${i}" }]
  worker_nodes        = [for i in [1, 2] : { name = "w${i}", ip = "10.0.0.2${i}" }]
  local_lb            = { type = "haproxy", healthcheck_port = 8081 }
}

resource "kha_haproxy_config" "node_local" {
  for_each = kha_cluster_endpoints.localhost.local_lb_node_ips # name => ip

  listen           = kha_cluster_endpoints.localhost.local_lb_listen
  backends         = kha_cluster_endpoints.localhost.apiserver_backends
  healthcheck_port = 8081
  delivery         = "static_pod"
  ssh              = { host = each.value }
}

resource "kha_cluster_endpoints" "c" {
  control_plane_nodes      = [{ name = "cp1", ip = "10.0.0.11" }]
  worker_nodes             = [{ name = "w1", ip = "10.0.0.21" }]
  apiserver_anonymous_auth = false
}

# The default check asks anonymously: every apiserver would answer 401.
resource "kha_haproxy_config" "x" {
  listen   = kha_cluster_endpoints.c.local_lb_listen
  backends = kha_cluster_endpoints.c.local_lb_backends
}

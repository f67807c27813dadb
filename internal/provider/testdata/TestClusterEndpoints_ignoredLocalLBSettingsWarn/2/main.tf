# The fix the warning names: the node-local load balancer runs beside the
# external one, and the plan has nothing to say.
resource "kha_cluster_endpoints" "test" {
  control_plane_nodes = [{ name = "cp1", ip = "10.0.0.11" }]
  worker_nodes        = [{ name = "w1", ip = "10.0.0.21" }]
  local_lb            = { enabled = true, type = "haproxy", healthcheck_port = 8081 }
  external_lb         = { address = "10.0.0.100", port = 8443, nodes = [] }
}

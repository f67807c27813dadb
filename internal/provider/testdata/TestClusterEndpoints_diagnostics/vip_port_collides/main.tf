resource "kha_cluster_endpoints" "test" {
  control_plane_nodes = [{ name = "cp1", ip = "10.0.0.11" }]
  external_lb         = { address = "10.0.0.100", runs_on_control_plane = true }
}

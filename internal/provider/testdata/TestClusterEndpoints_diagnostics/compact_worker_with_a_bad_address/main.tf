resource "kha_cluster_endpoints" "test" {
  control_plane_nodes = [{ name = "cp1", ip = "10.0.0.11" }]
  worker_addresses    = { w1 = "10.0.0.300" }
}

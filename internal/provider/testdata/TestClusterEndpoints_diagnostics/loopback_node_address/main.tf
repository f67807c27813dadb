resource "kha_cluster_endpoints" "test" {
  control_plane_nodes = [{ name = "cp1", ip = "10.0.0.11" }]
  worker_nodes        = [{ name = "w1", ip = "127.0.1.1" }]
}

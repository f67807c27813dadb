resource "kha_cluster_endpoints" "test" {
  control_plane_nodes = [{ name = "cp1", ip = "fd00::11" }]
}

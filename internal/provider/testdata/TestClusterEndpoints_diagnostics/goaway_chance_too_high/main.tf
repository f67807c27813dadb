# kube-apiserver refuses a --goaway-chance above 0.02.
resource "kha_cluster_endpoints" "c" {
  control_plane_nodes = [
    { name = "cp1", ip = "10.0.0.11" },
    { name = "cp2", ip = "10.0.0.12" },
  ]
  apiserver_goaway_chance = 0.5
}

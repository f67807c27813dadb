# Node-local load balancers and no external one: pods get the first
# control-plane node, and the plan warns that it is one node of three.
resource "kha_cluster_endpoints" "test" {
  control_plane_nodes = [{ name = "cp1", ip = "10.0.0.11" }, { name = "cp2", ip = "10.0.0.12" }, { name = "cp3", ip = "10.0.0.13" }]
  worker_nodes        = [{ name = "w1", ip = "10.0.0.21" }]
}

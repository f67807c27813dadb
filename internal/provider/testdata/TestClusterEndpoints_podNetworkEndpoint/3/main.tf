# An override on the loopback reaches nothing from a pod: the plan warns.
resource "kha_cluster_endpoints" "test" {
  control_plane_nodes           = [{ name = "cp1", ip = "10.0.0.11" }, { name = "cp2", ip = "10.0.0.12" }, { name = "cp3", ip = "10.0.0.13" }]
  worker_nodes                  = [{ name = "w1", ip = "10.0.0.21" }]
  pod_network_endpoint_override = "https://localhost:6443"
}

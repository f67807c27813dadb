resource "kha_cluster_endpoints" "test" {
  control_plane_nodes = [
    { name = "cp1", ip = "10.0.0.11" },
    { name = "cp2", ip = "10.0.0.12", access_ip = "192.0.2.12" },
    { name = "cp3", ip = "10.0.0.13" },
  ]
  worker_addresses = { w2 = "10.0.0.22", w1 = "10.0.0.21" }
  external_lb      = { address = "10.0.0.100", port = 8383, domain_name = "lb-apiserver.kubernetes.local" }
}

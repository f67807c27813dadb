resource "kha_cluster_endpoints" "test" {
  control_plane_nodes = [
    { name = "cp1", ip = "10.0.0.11" },
    { name = "cp2", ip = "10.0.0.12", access_ip = "192.0.2.12" },
    { name = "cp3", ip = "10.0.0.13" },
  ]
  worker_nodes = [{ name = "w1", ip = "10.0.0.21" }]
  local_lb                = { type = "haproxy", port = 16443, healthcheck_port = 8081 }
  supplementary_addresses = ["k8s.example.com"]
}

terraform {
  required_providers {
    kha = { source = "kha/kha" }
  }
}

resource "kha_cluster_endpoints" "cluster" {
  control_plane_nodes = [
    { name = "cp1", ip = "10.0.0.11" },
    { name = "cp2", ip = "10.0.0.12" },
    { name = "cp3", ip = "10.0.0.13" },
  ]
  worker_nodes = [
    { name = "w1", ip = "10.0.0.21" },
    { name = "w2", ip = "10.0.0.22" },
  ]
  local_lb = {
    enabled          = true
    type             = "haproxy"
    healthcheck_port = 8081
  }
  external_lb = {
    address     = "10.0.0.100"
    port        = 8443
    domain_name = "k8s.example.com"
  }
}

terraform {
  required_providers {
    kha = { source = "kha/kha" }
  }
}

# A node-local HAProxy config for each of 1,000 workers, rendered only.
resource "kha_cluster_endpoints" "scale" {
  control_plane_nodes = [for i in range(3) : { name = "cp${i}", ip = "10.0.0.${i + 1}" }]
  worker_addresses    = { for i in range(1000) : format("w%04d", i) => format("10.1.%d.%d", floor(i / 250), 1 + i % 250) }
  local_lb            = { type = "haproxy" }
}

resource "kha_haproxy_config" "worker" {
  for_each = toset(kha_cluster_endpoints.scale.local_lb_nodes)
  listen   = kha_cluster_endpoints.scale.local_lb_listen
  backends = kha_cluster_endpoints.scale.local_lb_backends
}

terraform {
  required_providers {
    kha = { source = "kha/kha" }
  }
}

# 3 control-plane nodes and 5,000 workers in the long form. range() stops
# at 1,024 elements, so the workers come in blocks of 1,000.
locals {
  workers = flatten([for b in range(5) : [for i in range(1000) : {
    name = format("w%05d", b * 1000 + i)
    ip   = format("10.%d.%d.%d", 1 + b, floor(i / 250), 1 + i % 250)
  }]])
}

resource "kha_cluster_endpoints" "scale" {
  control_plane_nodes = [for i in range(3) : { name = "cp${i}", ip = "10.0.0.${i + 1}" }]
  worker_nodes        = local.workers
  local_lb            = { enabled = true }
}

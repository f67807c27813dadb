terraform {
  required_providers {
    kha = { source = "kha/kha" }
  }
}

# 3 control-plane nodes and 5,000 workers in the compact form.
resource "kha_cluster_endpoints" "scale" {
  control_plane_nodes = [for i in range(3) : { name = "cp${i}", ip = "10.0.0.${i + 1}" }]
  worker_addresses = merge([for b in range(5) : {
    for i in range(1000) : format("w%05d", b * 1000 + i) => format("10.%d.%d.%d", 1 + b, floor(i / 250), 1 + i % 250)
  }]...)
  local_lb = { enabled = true }
}

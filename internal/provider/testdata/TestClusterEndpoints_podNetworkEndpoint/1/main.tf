# An IPv6-only cluster behind a VIP: pods outside the host network, Cilium
# and Calico get the VIP (bracketed in the URL, bare in the host fields),
# not the node-local load balancers' localhost.
resource "kha_cluster_endpoints" "test" {
  ip_family           = "ipv6"
  control_plane_nodes = [{ name = "cp1", ip = "fd00::11" }, { name = "cp2", ip = "fd00::12" }, { name = "cp3", ip = "fd00::13" }]
  worker_nodes        = [{ name = "w1", ip = "fd00::21" }]
  local_lb            = { enabled = true }
  external_lb         = { address = "fd00::100", port = 8443 }
  lb_health_check     = { interval = "10s", timeout = "5s", unhealthy_threshold = 3 }
}

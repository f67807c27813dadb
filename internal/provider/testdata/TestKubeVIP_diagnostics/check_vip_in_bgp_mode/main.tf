resource "kha_kube_vip" "cp1" {
  node_name = "cp1"
  address   = "10.0.0.100"
  mode      = "bgp"
  bgp       = { router_id = "10.0.0.11", peers = [{ address = "10.0.0.1", as = 65001 }] }
  nodes     = [{ name = "cp1", ip = "10.0.0.11" }]
  check_vip = true
}

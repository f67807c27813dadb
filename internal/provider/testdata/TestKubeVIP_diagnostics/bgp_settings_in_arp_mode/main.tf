resource "kha_kube_vip" "cp1" {
  node_name = "cp1"
  address   = "10.0.0.100"
  bgp       = { router_id = "10.0.0.11", peers = [{ address = "10.0.0.1", as = 65001 }] }
}

resource "kha_kube_vip" "cp1" {
  node_name = "cp1"
  address   = "10.0.0.100"
  check_vip = true
}

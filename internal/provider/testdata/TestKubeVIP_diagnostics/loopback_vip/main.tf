resource "kha_kube_vip" "cp1" {
  node_name = "cp1"
  address   = "127.0.0.1"
}

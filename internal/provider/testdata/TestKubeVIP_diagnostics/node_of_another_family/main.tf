resource "kha_kube_vip" "cp1" {
  node_name = "cp1"
  address   = "10.0.0.100"
  nodes     = [{ name = "cp1", ip = "fd00::11" }, { name = "cp2", ip = "10.0.0.12" }]
}

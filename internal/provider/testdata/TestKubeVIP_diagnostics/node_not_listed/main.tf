resource "kha_kube_vip" "cp1" {
  node_name = "cp1"
  address   = "10.0.0.100"
  nodes     = [{ name = "cp2", ip = "10.0.0.12" }, { name = "cp3", ip = "10.0.0.13" }]
}

# Step 1: bootstrap = true on the first control-plane node (no ssh: render only).
resource "kha_kube_vip" "cp1" {
  node_name = "cp1"
  address   = "10.0.0.100"
  bootstrap = true
}

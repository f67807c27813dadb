# kube-vip holds the VIP on the control-plane nodes; the apiservers answer
# on it themselves, on their own port, so nothing binds VIP:6443.
resource "kha_cluster_endpoints" "kube_vip" {
  control_plane_nodes = [for i in [1, 2, 3] : { name = "cp${i}", ip = "10.0.0.1${i}" }]
  worker_nodes        = [for i in [1, 2] : { name = "w${i}", ip = "10.0.0.2${i}" }]
  external_lb         = { address = "10.0.0.100", nodes = [] }
}

resource "kha_kube_vip" "cp" {
  for_each = { for n in kha_cluster_endpoints.kube_vip.control_plane_nodes : n.name => n }

  node_name = each.key
  address   = kha_cluster_endpoints.kube_vip.external_lb.address
  interface = "eth0"
  bootstrap = var.bootstrapping && each.key == "cp1" # super-admin.conf for kubeadm init only
  # The VIP is checked (check_vip) against these before kube-vip starts.
  nodes = [for n in kha_cluster_endpoints.kube_vip.control_plane_nodes : { name = n.name, ip = n.ip }]
  ssh   = { host = each.value.ip }
}

variable "bootstrapping" {
  type    = bool
  default = false
}

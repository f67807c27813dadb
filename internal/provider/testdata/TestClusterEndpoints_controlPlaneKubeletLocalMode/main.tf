# Three control-plane nodes and a worker behind an external load balancer
# (mode external_lb), with kubeadm of kubernetes_version: where the
# control-plane kubelets point, and what kubeadm is told about it.
variable "kubernetes_version" {
  type    = string
  default = null
}
variable "local_mode" {
  type    = bool
  default = null
}

resource "kha_cluster_endpoints" "test" {
  control_plane_nodes = [{ name = "cp1", ip = "10.63.0.11" }, { name = "cp2", ip = "10.63.0.12", access_ip = "192.0.2.12" }, { name = "cp3", ip = "10.63.0.13" }]
  worker_nodes        = [{ name = "w1", ip = "10.63.0.21" }]
  external_lb         = { address = "10.63.0.100", port = 8443, domain_name = "api.k8s.example", nodes = [] }
  kubeadm = {
    kubernetes_version               = var.kubernetes_version
    control_plane_kubelet_local_mode = var.local_mode
  }
}

# A MetalLB VIP for clients outside the cluster; the nodes keep their
# node-local load balancers (mode local_lb_with_unmanaged_lb).
resource "kha_cluster_endpoints" "metallb" {
  control_plane_nodes = [for i in [1, 2, 3] : { name = "cp${i}", ip = "10.0.0.1${i}" }]
  worker_nodes        = [for i in [1, 2] : { name = "w${i}", ip = "10.0.0.2${i}" }]
  local_lb            = { enabled = true }
  external_lb = {
    address     = "10.0.0.200"
    domain_name = "api.k8s.example.com"
    nodes       = [] # MetalLB answers for the VIP; nothing binds it on a control-plane node
    metallb     = { address_pool = "apiserver" }
  }
}

output "metallb_manifests" {
  value = kha_cluster_endpoints.metallb.metallb_manifests # apply with your Kubernetes tooling
}

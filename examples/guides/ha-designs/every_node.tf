# Epiphany's design, Talos KubePrism: every node, control-plane nodes
# included, and kubeadm's controlPlaneEndpoint go through localhost:3446;
# since Kubernetes 1.33 a control-plane node's kubelet talks to its own
# apiserver, as kubeadm writes it. Outside clients still get a real
# address: the external load balancer.
resource "kha_cluster_endpoints" "every_node" {
  control_plane_nodes = [for i in [1, 2, 3] : { name = "cp${i}", ip = "10.0.0.1${i}" }]
  worker_nodes        = [for i in [1, 2] : { name = "w${i}", ip = "10.0.0.2${i}" }]
  local_lb            = { enabled = true, every_node = true, port = 3446, type = "haproxy" }
  external_lb         = { address = "10.0.0.100", domain_name = "api.k8s.example.com", nodes = [] }
}

output "control_plane_endpoint" {
  value = kha_cluster_endpoints.every_node.kubeadm_control_plane_endpoint # "localhost:3446"
}

# Epiphany's design: HAProxy on every node on localhost:3446, kubeadm's
# controlPlaneEndpoint included; outside clients use a MetalLB VIP. A node
# listed as control plane and as worker (kubespray's all-in-one) is one
# control-plane node.
resource "kha_cluster_endpoints" "test" {
  control_plane_nodes = [
    { name = "cp1", ip = "10.0.0.11", hostname = "m0", fqdn = "m0.dc1.example.com" },
    { name = "cp2", ip = "10.0.0.12" },
  ]
  worker_nodes = [
    { name = "cp2", ip = "10.0.0.12" },
    { name = "w1", ip = "10.0.0.21" },
  ]
  local_lb    = { every_node = true, port = 3446, type = "haproxy" }
  external_lb = { address = "192.168.56.42", port = 443, domain_name = "api.example.com", metallb = {} }
  kubeadm     = { etcd_endpoints = ["https://10.0.0.11:2379"] }
}

resource "kha_cluster_endpoints" "cluster" {
  control_plane_nodes = [
    { name = "cp1", ip = "10.0.0.11" },
    { name = "cp2", ip = "10.0.0.12" },
    { name = "cp3", ip = "10.0.0.13" },
  ]
  local_lb = { enabled = true, type = "haproxy" }
  # A name the apiserver certificates kubeadm issued do not have yet.
  external_lb = { address = "10.0.0.100", port = 8443, domain_name = "k8s.example.com" }
}

# Every control-plane node's serving certificate re-issued with the plan's SANs,
# on the node with kubeadm's CA, one node at a time: each is served and verified
# through the node's own address and the VIP before the next node starts.
resource "kha_apiserver_serving_certificate" "cp" {
  for_each = { for n in kha_cluster_endpoints.cluster.control_plane_nodes : n.name => n.ip }

  sans             = kha_cluster_endpoints.cluster.apiserver_cert_sans
  verify_endpoints = ["https://${each.value}:6443", "https://10.0.0.100:8443"]

  ssh = { host = each.value, user = "admin", sudo = true }
}

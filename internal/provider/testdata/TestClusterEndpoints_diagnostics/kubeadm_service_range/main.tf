# The certificate kubeadm made for cp1 with its defaults (Service address
# 10.96.0.1), as kha_apiserver_certificate reads it; service_cidr unset.
resource "kha_cluster_endpoints" "test" {
  control_plane_nodes = [{ name = "cp1", ip = "10.62.0.11" }]
  existing_cert_sans = {
    dns_names    = ["cp1", "kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local"]
    ip_addresses = ["10.96.0.1", "10.62.0.11"]
  }
}

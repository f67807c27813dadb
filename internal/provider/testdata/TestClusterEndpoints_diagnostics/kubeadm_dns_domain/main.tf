# A kubeadm cluster made with networking.dnsDomain corp.example; dns_domain
# unset.
resource "kha_cluster_endpoints" "test" {
  control_plane_nodes = [{ name = "cp1", ip = "10.62.0.11" }]
  service_cidr        = "10.96.0.0/12"
  existing_cert_sans = {
    dns_names    = ["cp1", "kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.corp.example"]
    ip_addresses = ["10.96.0.1", "10.62.0.11"]
  }
}

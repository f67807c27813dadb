# Empty lists are a certificate without SANs: every endpoint is refused.
resource "kha_cluster_endpoints" "test" {
  control_plane_nodes = [{ name = "cp1", ip = "10.0.0.11" }]
  external_lb         = { address = "10.0.0.100", domain_name = "api.example.com" }
  existing_cert_sans  = { dns_names = [], ip_addresses = [] }
}

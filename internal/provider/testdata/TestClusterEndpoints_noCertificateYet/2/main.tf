# Both lists null: no certificate yet (kha_apiserver_certificate with
# allow_missing before the first apiserver runs). Nothing is checked.
resource "kha_cluster_endpoints" "test" {
  control_plane_nodes = [{ name = "cp1", ip = "10.0.0.11" }]
  external_lb         = { address = "10.0.0.100", domain_name = "api.example.com" }
  existing_cert_sans  = { dns_names = null, ip_addresses = null }
}

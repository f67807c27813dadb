# The certificate the apiservers really have, read from the first control-plane node.
# Before kubeadm init there is none: allow_missing reads that as null SAN lists
# (found = false), and the same configuration serves the bootstrap and every later run.
data "kha_apiserver_certificate" "live" {
  ssh           = { host = "10.0.0.11", user = "admin", sudo = true }
  allow_missing = true
}

# Adding an external load balancer: the plan fails, naming each endpoint and the
# whole SAN set to re-issue with, if the live certificate does not cover
# api.k8s.example.com yet.
resource "kha_cluster_endpoints" "cluster" {
  control_plane_nodes = [
    { name = "cp1", ip = "10.0.0.11" },
    { name = "cp2", ip = "10.0.0.12" },
    { name = "cp3", ip = "10.0.0.13" },
  ]
  external_lb = { address = "10.0.0.100", port = 8443, domain_name = "api.k8s.example.com" }
  existing_cert_sans = {
    dns_names    = data.kha_apiserver_certificate.live.dns_names
    ip_addresses = data.kha_apiserver_certificate.live.ip_addresses
  }
}

output "apiserver_certificate_expires" {
  value = data.kha_apiserver_certificate.live.not_after
}

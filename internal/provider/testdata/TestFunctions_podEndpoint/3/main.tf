terraform {
  required_providers {
    kha = { source = "hashicorp/kha" }
  }
}

# Behind node-local load balancers without a VIP: endpoints.global is
# localhost, pod_network_endpoint the first control-plane node.
resource "kha_cluster_endpoints" "test" {
  control_plane_nodes = [{ name = "cp1", ip = "fd00::11" }]
  ip_family           = "ipv6"
}

output "v6"       { value = provider::kha::pod_endpoint("https://[FD00::0100]:8443") }
output "default"  { value = provider::kha::pod_endpoint("https://api.example.com") }
output "from_kha" { value = provider::kha::pod_endpoint(kha_cluster_endpoints.test.pod_network_endpoint).host }

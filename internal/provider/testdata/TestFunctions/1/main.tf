terraform {
  required_providers {
    kha = { source = "hashicorp/kha" }
  }
}

output "v6"   { value = provider::kha::endpoint_url("FD00::0011", 6443) }
output "name" { value = provider::kha::endpoint_url("Api.Example.com.", 443) }
output "sans" { value = provider::kha::cert_sans(["b.example.com", "10.0.0.1", "fd00::0001", "FD00::1", "*.example.com", "B.EXAMPLE.COM"]) }

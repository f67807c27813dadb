locals {
  sans = provider::kha::cert_sans(["api.example.com", "10.0.0.100", "FD00::0001", "fd00::1"])
}

# local.sans = {
#   dns_names    = ["api.example.com"]
#   ip_addresses = ["10.0.0.100", "fd00::1"]
# }
output "sans" {
  value = local.sans
}

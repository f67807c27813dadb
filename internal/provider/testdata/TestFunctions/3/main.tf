terraform {
  required_providers {
    kha = { source = "hashicorp/kha" }
  }
}

output "bad" { value = provider::kha::cert_sans(["ok.example.com", "not a host"]) }

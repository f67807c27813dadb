terraform {
  required_providers {
    kha = { source = "hashicorp/kha" }
  }
}

output "bad" { value = provider::kha::endpoint_url("10.0.0.1", 0) }

terraform {
  required_providers {
    kha = { source = "hashicorp/kha" }
  }
}

output "bad" { value = provider::kha::pod_endpoint("10.0.0.100:6443") }

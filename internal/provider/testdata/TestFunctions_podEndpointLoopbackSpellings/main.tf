terraform {
  required_providers {
    kha = { source = "hashicorp/kha" }
  }
}

variable "url" {
  type = string
}

output "endpoint" { value = provider::kha::pod_endpoint(var.url) }

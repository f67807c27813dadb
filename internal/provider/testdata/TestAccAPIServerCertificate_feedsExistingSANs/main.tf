variable "host" { type = string }
variable "port" { type = number }
variable "host_key" { type = string }
variable "private_key" {
  type      = string
  sensitive = true
}
variable "cert_path" { type = string }
variable "apiserver" { type = string }
variable "lb_domain_name" {
  type    = string
  default = null
}

provider "kha" {
  default_ssh = { private_key = var.private_key }
}

# The file on a control-plane node.
data "kha_apiserver_certificate" "file" {
  ssh  = { host = var.host, port = var.port, host_key = var.host_key }
  path = var.cert_path
}

# What an apiserver serves, seen from Terraform's machine and from the node.
data "kha_apiserver_certificate" "served" {
  address = var.apiserver
}

data "kha_apiserver_certificate" "served_from_node" {
  ssh     = { host = var.host, port = var.port, host_key = var.host_key }
  address = var.apiserver
}

resource "kha_cluster_endpoints" "c" {
  control_plane_nodes = [{ name = "cp1", ip = "192.0.2.11" }, { name = "cp2", ip = "192.0.2.12" }]
  worker_nodes        = [{ name = "w1", ip = "192.0.2.13" }]
  local_lb            = { enabled = true }
  external_lb         = var.lb_domain_name == null ? null : { address = "10.0.0.100", port = 8443, domain_name = var.lb_domain_name }
  existing_cert_sans = {
    dns_names    = data.kha_apiserver_certificate.file.dns_names
    ip_addresses = data.kha_apiserver_certificate.file.ip_addresses
  }
}

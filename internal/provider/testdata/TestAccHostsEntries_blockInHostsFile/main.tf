variable "host" { type = string }
variable "port" { type = number }
variable "host_key" { type = string }
variable "private_key" {
  type      = string
  sensitive = true
}
variable "path" { type = string }
variable "marker" {
  type    = string
  default = "entries"
}

provider "kha" {
  default_ssh = { private_key = var.private_key }
}

resource "kha_cluster_endpoints" "c" {
  control_plane_nodes = [{ name = "cp1", ip = "10.0.0.11" }]
  external_lb         = { address = "10.0.0.100", port = 8443, domain_name = "api.k8s.example.com" }
}

resource "kha_hosts_entries" "lb" {
  entries = kha_cluster_endpoints.c.hosts_entries
  path    = var.path
  marker  = var.marker
  ssh     = { host = var.host, port = var.port, host_key = var.host_key }
}

variable "host" { type = string }
variable "port" { type = number }
variable "host_key" { type = string }
variable "private_key" {
  type      = string
  sensitive = true
}
variable "endpoint" { type = string }
variable "kube_proxy_server" { type = string }

provider "kha" {
  default_ssh = { host_key = var.host_key, private_key = var.private_key }
}

resource "kha_endpoint_configmaps" "cluster" {
  ssh                    = { host = var.host, port = var.port }
  control_plane_endpoint = var.endpoint
  cert_sans              = ["lb.example.com", "10.0.0.11", "cp1"]
  kube_proxy_server      = var.kube_proxy_server
  restart_kube_proxy     = true
}

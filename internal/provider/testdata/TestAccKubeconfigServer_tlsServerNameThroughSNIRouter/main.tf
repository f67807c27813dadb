variable "host" { type = string }
variable "port" { type = number }
variable "host_key" { type = string }
variable "private_key" {
  type      = string
  sensitive = true
}
variable "path" { type = string }
variable "server" { type = string }
variable "tls_server_name" {
  type    = string
  default = null
}

provider "kha" {
  default_ssh = { host = var.host, port = var.port, host_key = var.host_key, private_key = var.private_key }
}

# The kubelet's kubeconfig on a node-local load balancer whose fallback is
# a load balancer that routes by SNI.
resource "kha_kubeconfig_server" "node" {
  paths           = [var.path]
  server          = var.server
  tls_server_name = var.tls_server_name
  restart_command = "true"
  verify_timeout  = "3s"
}

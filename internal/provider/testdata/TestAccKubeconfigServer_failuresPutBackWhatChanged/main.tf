variable "host" { type = string }
variable "port" { type = number }
variable "host_key" { type = string }
variable "private_key" {
  type      = string
  sensitive = true
}
variable "paths" { type = list(string) }
variable "server" { type = string }
variable "restart_command" { type = string }
variable "verify" {
  type    = bool
  default = null
}
variable "verify_timeout" {
  type    = string
  default = "3s"
}

provider "kha" {
  default_ssh = { host = var.host, port = var.port, host_key = var.host_key, private_key = var.private_key }
}

resource "kha_kubeconfig_server" "node" {
  paths           = var.paths
  server          = var.server
  restart_command = var.restart_command
  verify          = var.verify
  verify_timeout  = var.verify_timeout
}

variable "host" { type = string }
variable "port" { type = number }
variable "host_key" { type = string }
variable "private_key" {
  type      = string
  sensitive = true
}
variable "path" { type = string }
variable "server" { type = string }
variable "restart_command" {
  type    = string
  default = "true"
}

provider "kha" {
  default_ssh = { host = var.host, port = var.port, host_key = var.host_key, private_key = var.private_key }
}

resource "kha_kubeconfig_server" "node" {
  paths           = [var.path]
  server          = var.server
  cluster_name    = "kubernetes"
  restart_command = var.restart_command
  # An endpoint that does not answer is retried this long.
  verify_timeout = "3s"
}

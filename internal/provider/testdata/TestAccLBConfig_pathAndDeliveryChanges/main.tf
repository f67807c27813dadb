variable "host" { type = string }
variable "port" { type = number }
variable "host_key" { type = string }
variable "private_key" {
  type      = string
  sensitive = true
}
variable "dir" { type = string }
variable "nginx_config" { type = string }
variable "haproxy_delivery" { type = string }

provider "kha" {
  default_ssh = { host = var.host, port = var.port, host_key = var.host_key, private_key = var.private_key }
}

# Files only: no load balancer runs, so nothing could pass verification.
locals {
  listen   = { address = "127.0.0.1", port = 6443 }
  backends = [{ name = "cp1", address = "10.0.0.11", port = 6443 }]
}

resource "kha_nginx_config" "test" {
  listen              = local.listen
  backends            = local.backends
  config_path         = "${var.dir}/${var.nginx_config}"
  validate_command    = "true"
  reload_command      = "true"
  destroy_command     = "true"
  verify_after_reload = false
  ssh                 = {}
}

resource "kha_haproxy_config" "test" {
  listen              = local.listen
  backends            = local.backends
  health_check        = { insecure_skip_verify = true }
  delivery            = var.haproxy_delivery
  config_path         = "${var.dir}/haproxy/haproxy.cfg"
  manifest_path       = "${var.dir}/manifests/haproxy.yml"
  validate_command    = "true"
  reload_command      = "true"
  destroy_command     = "true"
  verify_after_reload = false
  ssh                 = {}
}

# Every resource that renders its files from inputs, on one host, with
# credentials and host keys from the provider's default_ssh, as import
# needs. dir holds the files the host already has.
variable "host" { type = string }
variable "port" { type = number }
variable "private_key" {
  type      = string
  sensitive = true
}
variable "known_hosts" { type = string }
variable "dir" { type = string }

provider "kha" {
  default_ssh = { private_key = var.private_key, known_hosts = var.known_hosts }
}

locals {
  ssh = { host = var.host, port = var.port }
}

resource "kha_haproxy_config" "lb" {
  listen              = { address = "127.0.0.1", port = 16443 }
  backends            = [{ name = "cp1", address = "10.0.0.11", port = 6443 }]
  health_check        = { type = "tcp" }
  config_path         = "${var.dir}/haproxy.cfg"
  reload_command      = ""
  destroy_command     = ""
  preflight_command   = ""
  verify_after_reload = false
  on_destroy          = "restore" # destroy puts back what import found
  ssh                 = local.ssh
}

resource "kha_nginx_config" "lb" {
  listen              = { address = "127.0.0.1", port = 16444 }
  backends            = [{ name = "cp1", address = "10.0.0.11", port = 6443 }]
  config_path         = "${var.dir}/nginx.conf"
  reload_command      = ""
  destroy_command     = ""
  preflight_command   = ""
  verify_after_reload = false
  on_destroy          = "restore" # destroy puts back what import found
  ssh                 = local.ssh
}

resource "kha_keepalived_config" "vip" {
  node = "lb1"
  nodes = [
    { name = "lb1", ip = "10.0.0.5", priority = 150 },
    { name = "lb2", ip = "10.0.0.6", priority = 100 },
  ]
  vip               = "10.0.0.100"
  interface         = "eth0"
  virtual_router_id = 51
  config_path       = "${var.dir}/keepalived.conf"
  reload_command    = ""
  on_destroy        = "restore" # destroy puts back what import found
  check_vip         = false     # this machine is not on 10.0.0.0/24
  ssh               = local.ssh
}

resource "kha_kube_vip" "cp1" {
  node_name     = "cp1"
  address       = "10.0.0.100"
  manifest_path = "${var.dir}/kube-vip.yml"
  on_destroy    = "restore" # destroy puts back what import found
  ssh           = local.ssh
}

resource "kha_etcd_access" "etcd" {
  members    = [{ name = "etcd1", ip = "10.0.0.11" }]
  env_path   = "${var.dir}/etcd-access.env"
  on_destroy = "restore" # destroy puts back what import found
  ssh        = local.ssh
}

resource "kha_hosts_entries" "api" {
  entries    = ["10.0.0.100 api.example.com"]
  path       = "${var.dir}/hosts"
  marker     = "api"
  on_destroy = "restore" # destroy puts back what import found
  ssh        = local.ssh
}

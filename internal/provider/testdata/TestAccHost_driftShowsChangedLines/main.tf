# A load balancer's configuration and a hosts block, whose drift shows the changed lines,
# and a kha_file, whose content a drift warning never shows.
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

resource "kha_haproxy_config" "lb" {
  listen              = { address = "127.0.0.1", port = 16443 }
  backends            = [{ name = "cp1", address = "10.0.0.11", port = 6443 }]
  health_check        = { type = "tcp" }
  config_path         = "${var.dir}/haproxy.cfg"
  reload_command      = ""
  destroy_command     = ""
  preflight_command   = ""
  verify_after_reload = false
  ssh                 = { host = var.host, port = var.port }
}

resource "kha_file" "notes" {
  path    = "${var.dir}/notes"
  content = "kept\n"
  ssh     = { host = var.host, port = var.port }
}

resource "kha_hosts_entries" "api" {
  path    = "${var.dir}/hosts"
  entries = ["10.0.0.100 api.k8s.example.com"]
  ssh     = { host = var.host, port = var.port }
}

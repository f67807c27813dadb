variable "host" { type = string }
variable "port" { type = number }
variable "host_key" { type = string }
variable "private_key" {
  type      = string
  sensitive = true
}

provider "kha" {
  default_ssh = { host_key = var.host_key, private_key = var.private_key, refresh_timeout = "2s", timeout = "20s" }
}

resource "kha_endpoint_configmaps" "cluster" {
  ssh                    = { host = var.host, port = var.port }
  control_plane_endpoint = "lb.example.com:6443"
}

variable "host" { type = string }
variable "port" { type = number }
variable "host_key" { type = string }
variable "private_key" {
  type      = string
  sensitive = true
}

provider "kha" {
  default_ssh = { host = var.host, port = var.port, host_key = var.host_key, private_key = var.private_key }
}

# A cluster whose kube-proxy Cilium replaced: no kube-proxy ConfigMap, and
# kube_proxy_server unset.
resource "kha_endpoint_configmaps" "cluster" {
  control_plane_endpoint = "[fd00::100]:6443"
  cert_sans              = ["fd00::100", "10.0.0.11"]
}

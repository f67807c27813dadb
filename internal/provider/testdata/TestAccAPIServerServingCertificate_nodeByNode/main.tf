variable "private_key" {
  type      = string
  sensitive = true
}
# The SSH port of each node's sshd, its certificate directory and its
# apiserver's address.
variable "nodes" {
  type = list(object({ port = number, pki = string, apiserver = string }))
}
variable "known_hosts" { type = string }
variable "sans" { type = object({ dns_names = list(string), ip_addresses = list(string) }) }
variable "load_balancer" { type = string }
variable "renew_before" {
  type    = string
  default = null
}
variable "validity" {
  type    = string
  default = null
}

provider "kha" {
  default_ssh = { host = "127.0.0.1", private_key = var.private_key, known_hosts = var.known_hosts }
}

resource "kha_apiserver_serving_certificate" "cp" {
  count = length(var.nodes)

  ssh                 = { port = var.nodes[count.index].port }
  sans                = var.sans
  certificate_path    = "${var.nodes[count.index].pki}/apiserver.crt"
  key_path            = "${var.nodes[count.index].pki}/apiserver.key"
  ca_certificate_path = "${var.nodes[count.index].pki}/ca.crt"
  ca_key_path         = "${var.nodes[count.index].pki}/ca.key"
  apiserver_address   = var.nodes[count.index].apiserver
  # HAProxy in front of every node's apiserver, round robin.
  verify_endpoints = [var.load_balancer]
  serving_timeout  = "60s"
  verify_timeout   = "20s"
  renew_before     = var.renew_before
  validity         = var.validity
}

variable "host" { type = string }
variable "port" { type = number }
variable "host_key" { type = string }
variable "private_key" {
  type      = string
  sensitive = true
}
variable "pki" { type = string }
variable "ca_key" { type = string }
variable "apiserver" { type = string }
variable "sans" { type = object({ dns_names = list(string), ip_addresses = list(string) }) }
variable "keep_live_sans" { type = bool }
variable "verify_endpoints" { type = list(string) }
variable "create_timeout" {
  type    = string
  default = "2m"
}

provider "kha" {
  default_ssh = { host = var.host, port = var.port, host_key = var.host_key, private_key = var.private_key }
}

resource "kha_apiserver_serving_certificate" "cp" {
  sans                = var.sans
  keep_live_sans      = var.keep_live_sans
  certificate_path    = "${var.pki}/apiserver.crt"
  key_path            = "${var.pki}/apiserver.key"
  ca_certificate_path = "${var.pki}/ca.crt"
  ca_key_path         = var.ca_key
  apiserver_address   = var.apiserver
  verify_endpoints    = var.verify_endpoints
  serving_timeout     = "10s"
  verify_timeout      = "5s"
  timeouts = {
    create = var.create_timeout
  }
}

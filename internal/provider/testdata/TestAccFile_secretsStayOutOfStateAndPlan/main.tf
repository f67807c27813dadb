# Secret content and a secret key, both write-only: neither may reach the
# plan or the state.
variable "host" { type = string }
variable "port" { type = number }
variable "host_key" { type = string }
variable "path" { type = string }
variable "private_key" {
  type      = string
  sensitive = true
  ephemeral = true
}
variable "token" {
  type      = string
  sensitive = true
  ephemeral = true
}

resource "kha_file" "test" {
  path            = var.path
  content_wo      = var.token
  mode            = "0600"
  keep_on_destroy = true
  ssh = {
    host           = var.host
    port           = var.port
    host_key       = var.host_key
    private_key_wo = var.private_key
  }
}

variable "user" { type = string }
variable "private_key" {
  type      = string
  sensitive = true
}
variable "path" { type = string }
variable "host" { type = string }
variable "port" { type = number }
variable "host_key" { type = string }
variable "bastion_host" { type = string }
variable "bastion_port" { type = number }
variable "bastion_host_key" { type = string }

provider "kha" {
  default_ssh = {
    user        = var.user
    sudo        = true
    private_key = var.private_key
  }
}

resource "kha_file" "test" {
  path    = var.path
  content = "stream {}\n"
  owner   = "root"
  mode    = "0600"
  ssh = {
    host             = var.host
    port             = var.port
    host_key         = var.host_key
    bastion_host     = var.bastion_host
    bastion_port     = var.bastion_port
    bastion_host_key = var.bastion_host_key
  }
}

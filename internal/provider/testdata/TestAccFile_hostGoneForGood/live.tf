# Shared by the steps (each step's directory links it, and so does
# TestAccHost_unreachableDuringRefresh): the provider and kha_file.live on
# the host that stays. ssh.timeout is short by default, so that a host
# that is gone fails in seconds.
variable "private_key" {
  type      = string
  sensitive = true
}
variable "known_hosts" { type = string }
variable "live_port" { type = number }
variable "gone_port" { type = number }
variable "live_path" { type = string }
variable "gone_path" { type = string }
variable "live_content" {
  type    = string
  default = "live\n"
}
variable "timeout" {
  type    = string
  default = "2s"
}
variable "refresh_timeout" {
  type    = string
  default = null
}

provider "kha" {
  default_ssh = {
    private_key     = var.private_key
    known_hosts     = var.known_hosts
    timeout         = var.timeout
    refresh_timeout = var.refresh_timeout
  }
}

resource "kha_file" "live" {
  path    = var.live_path
  content = var.live_content
  ssh     = { host = "127.0.0.1", port = var.live_port }
}

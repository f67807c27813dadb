# Two hosts, one of which stops answering: a refresh gives up on it after
# ssh.refresh_timeout (short), while changes keep the long ssh.timeout.
variable "private_key" {
  type      = string
  sensitive = true
}
variable "known_hosts" { type = string }
variable "live_port" { type = number }
variable "gone_port" { type = number }
variable "live_path" { type = string }
variable "gone_path" { type = string }
variable "live_content" { type = string }
variable "gone_keep" {
  type    = bool
  default = false
}

provider "kha" {
  default_ssh = {
    private_key     = var.private_key
    known_hosts     = var.known_hosts
    timeout         = "2m"
    refresh_timeout = "2s"
  }
}

resource "kha_file" "live" {
  path    = var.live_path
  content = var.live_content
  ssh     = { host = "127.0.0.1", port = var.live_port }
}

resource "kha_file" "gone" {
  path            = var.gone_path
  content         = "gone\n"
  keep_on_destroy = var.gone_keep
  ssh             = { host = "127.0.0.1", port = var.gone_port }
}

# kha_file.gone on the host that stops answering; live.tf (linked) has the
# provider and kha_file.live.
variable "gone_keep" {
  type    = bool
  default = false
}

resource "kha_file" "gone" {
  path            = var.gone_path
  content         = "gone\n"
  keep_on_destroy = var.gone_keep
  ssh             = { host = "127.0.0.1", port = var.gone_port }
}

# kha_file.gone on the host that goes away.
resource "kha_file" "gone" {
  path    = var.gone_path
  content = "gone\n"
  ssh     = { host = "127.0.0.1", port = var.gone_port }
}

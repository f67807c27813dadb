variable "path" {
  type = string
}

resource "kha_haproxy_config" "x" {
  listen      = { address = "127.0.0.1", port = 6443 }
  backends    = [{ name = "cp1", address = "10.0.0.11", port = 6443 }]
  config_path = var.path
  ssh         = { host = "192.0.2.1", host_key = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGtoYS1wcm9iZS1rZXktb2Ytbm8taG9zdC1hdC1hbGwh", agent = true }
}

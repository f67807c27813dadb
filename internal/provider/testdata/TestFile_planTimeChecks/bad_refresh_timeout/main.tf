variable "private_key" {
  type      = string
  default   = null
  sensitive = true
}

resource "kha_file" "test" {
  path    = "/etc/kha/x"
  content = "x"
  ssh = { host = "192.0.2.1", host_key = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGtoYS1wcm9iZS1rZXktb2Ytbm8taG9zdC1hdC1hbGwh", agent = true, timeout = "30s", refresh_timeout = "0s" }
}

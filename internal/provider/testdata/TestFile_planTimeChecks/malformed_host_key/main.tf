variable "private_key" {
  type      = string
  default   = null
  sensitive = true
}

resource "kha_file" "test" {
  path    = "/etc/kha/x"
  content = "x"
  ssh = { host = "192.0.2.1", host_key = "ssh-ed25519 not-base64", agent = true }
}

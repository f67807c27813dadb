# A node-local and an external HAProxy on one worker, both at their
# defaults: both would write /etc/haproxy/haproxy.cfg.
locals {
  backends = [{ name = "cp1", address = "10.0.0.11", port = 6443 }]
}

resource "kha_haproxy_config" "node_local" {
  listen   = { address = "127.0.0.1", port = 6443 }
  backends = local.backends
  ssh      = { host = "192.0.2.21", host_key = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGtoYS1wcm9iZS1rZXktb2Ytbm8taG9zdC1hdC1hbGwh", agent = true }
}

resource "kha_haproxy_config" "vip" {
  role     = "external"
  listen   = { address = "10.0.0.100", port = 8443 }
  backends = local.backends
  ssh      = { host = "192.0.2.21", host_key = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGtoYS1wcm9iZS1rZXktb2Ytbm8taG9zdC1hdC1hbGwh", agent = true }
}

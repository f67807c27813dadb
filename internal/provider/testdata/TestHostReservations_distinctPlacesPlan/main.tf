# What does not collide: a node-local and an external HAProxy on one node
# with a config file each, blocks with markers of their own in one file,
# and the same file on two hosts.
locals {
  backends = [{ name = "cp1", address = "10.0.0.11", port = 6443 }]
  ssh      = { host = "192.0.2.21", host_key = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGtoYS1wcm9iZS1rZXktb2Ytbm8taG9zdC1hdC1hbGwh", agent = true }
}

resource "kha_haproxy_config" "node_local" {
  listen   = { address = "127.0.0.1", port = 6443 }
  backends = local.backends
  ssh      = local.ssh
}

resource "kha_haproxy_config" "vip" {
  role            = "external"
  listen          = { address = "10.0.0.100", port = 8443 }
  backends        = local.backends
  config_path     = "/etc/kha/external-proxy.cfg"
  reload_command  = "systemctl enable haproxy@external && systemctl reload-or-restart haproxy@external"
  destroy_command = "systemctl disable --now haproxy@external"
  ssh             = local.ssh
}

resource "kha_haproxy_config" "other_host" {
  listen   = { address = "127.0.0.1", port = 6443 }
  backends = local.backends
  ssh      = merge(local.ssh, { host = "192.0.2.22" })
}

resource "kha_haproxy_config" "other_port" {
  listen   = { address = "127.0.0.1", port = 6443 }
  backends = local.backends
  ssh      = merge(local.ssh, { port = 2222 })
}

resource "kha_hosts_entries" "api" {
  entries = ["10.0.0.100 api.k8s.example.com"]
  marker  = "api"
  ssh     = local.ssh
}

resource "kha_hosts_entries" "registry" {
  entries = ["10.0.0.50 registry.example.com"]
  marker  = "registry"
  ssh     = local.ssh
}

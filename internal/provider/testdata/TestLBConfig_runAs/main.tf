# Which user HAProxy drops root to: Debian's haproxy by default under
# systemd, the one run_as names, none with run_as = "root", and none in a
# static pod, whose image runs HAProxy as its own user.
locals {
  lb = {
    listen   = { address = "127.0.0.1", port = 16443 }
    backends = [{ name = "cp1", address = "10.0.0.11", port = 6443 }]
  }
}

resource "kha_haproxy_config" "default" {
  listen   = local.lb.listen
  backends = local.lb.backends
}

resource "kha_haproxy_config" "named" {
  listen      = local.lb.listen
  backends    = local.lb.backends
  config_path = "/etc/kha/lb-named.cfg"
  run_as      = "kha-lb:kha"
}

resource "kha_haproxy_config" "root" {
  listen      = local.lb.listen
  backends    = local.lb.backends
  config_path = "/etc/kha/lb-root.cfg"
  run_as      = "root"
}

resource "kha_haproxy_config" "static_pod" {
  listen   = local.lb.listen
  backends = local.lb.backends
  delivery = "static_pod"
}

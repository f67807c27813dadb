resource "kha_haproxy_config" "x" {
  listen   = { address = "127.0.0.1", port = 6443 }
  backends = [{ name = "cp1", address = "10.0.0.11", port = 6443 }]
  handover = true
}

# Without ssh the load balancer only renders: its id is a digest, which
# names no host.
resource "kha_handover" "x" {
  target_id     = kha_haproxy_config.x.id
  target_sha256 = kha_haproxy_config.x.handover_sha256
  ssh           = { host = "10.0.0.21" }
}

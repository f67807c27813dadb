# Without ssh, kha_haproxy_config renders only: no host to reach.
resource "kha_haproxy_config" "lb" {
  listen        = { address = "127.0.0.1", port = 7443 }
  backends      = [{ name = "cp0", address = "10.0.0.1", port = 6443 }]
  rollout_group = ""
}

resource "kha_haproxy_config" "x" {
  listen           = { address = "127.0.0.1", port = 6443 }
  backends         = [{ name = "cp1", address = "10.0.0.11", port = 6443 }]
  healthcheck_port = 8081
  monitoring       = { metrics_listen = "all" }
}

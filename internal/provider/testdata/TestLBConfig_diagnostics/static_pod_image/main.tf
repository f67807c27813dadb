resource "kha_haproxy_config" "x" {
  listen       = { address = "127.0.0.1", port = 6443 }
  backends     = [{ name = "cp1", address = "10.0.0.11", port = 6443 }]
  health_check = { ca_file = "/etc/kubernetes/pki/ca.crt" }
  delivery     = "static_pod"
  static_pod   = { image = "Not An Image!" }
}

# The host is created in the same run: its address is unknown at plan,
# the rendering is not.
resource "terraform_data" "host" {
  input = "127.0.0.1"
}

resource "kha_haproxy_config" "test" {
  listen       = { address = "127.0.0.1", port = 6443 }
  backends     = [{ name = "cp1", address = "10.0.0.11", port = 6443 }]
  health_check = { ca_file = "/etc/kubernetes/pki/ca.crt" }
  ssh = {
    host                        = terraform_data.host.output
    port                        = 1
    insecure_trust_on_first_use = true
    agent                       = true
    timeout                     = "1s"
  }
}

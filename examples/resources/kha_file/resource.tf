# The key lives on the provider: provider configuration is never stored in
# plan or state, and refresh and destroy, which run without a resource's
# configuration, still have it. (A resource's write-only private_key_wo is
# there only while planning and applying, so destroy could not use it.)
provider "kha" {
  default_ssh = {
    user        = "admin"
    sudo        = true
    private_key = file(pathexpand("~/.ssh/id_ed25519"))
  }
}

# An HAProxy configuration kept in place on a worker node: validated with the
# real binary before it replaces the old one, reloaded afterwards.
resource "kha_file" "haproxy" {
  path             = "/etc/haproxy/haproxy.cfg"
  content          = file("${path.module}/haproxy.cfg")
  mode             = "0644"
  validate_command = "haproxy -c -q -f %s"
  reload_command   = "systemctl reload haproxy"

  ssh = {
    host     = "10.0.0.21"
    host_key = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIKsvY0IuGzR1tYzOm0nmO0AcmTnHrCpL0Tu+ek8SVDmX"
  }
}

# A secret file: content_wo is never stored in plan or state, only its digest
# (Terraform 1.11+). An ephemeral variable or resource can feed it.
variable "bootstrap_token" {
  type      = string
  sensitive = true
  ephemeral = true
}

resource "kha_file" "token" {
  path       = "/etc/kubernetes/bootstrap-token"
  content_wo = var.bootstrap_token
  mode       = "0600"
  owner      = "root"
  ssh        = { host = "10.0.0.21" }
}

# Every node of a VIP pair (kha_haproxy_config or kha_nginx_config with
# role = "external") binds the VIP before keepalived gives it to one of them:
# on the first apply no node holds it yet. Let the load balancer bind an
# address the node does not have, now and after a reboot, on every node of
# the pair (the IPv6 line for an IPv6 VIP).
resource "kha_file" "nonlocal_bind" {
  for_each = toset(["10.0.0.31", "10.0.0.32"]) # the load balancer pair

  path    = "/etc/sysctl.d/90-kha-nonlocal-bind.conf"
  content = "net.ipv4.ip_nonlocal_bind = 1\nnet.ipv6.ip_nonlocal_bind = 1\n"
  # Every key must exist on the host: a misspelt one fails here, not at boot.
  validate_command = "sysctl -n $(sed -n '/^[#;]/d; s/[[:space:]]*=.*//p' %s) >/dev/null"
  reload_command   = "sysctl -p /etc/sysctl.d/90-kha-nonlocal-bind.conf"
  destroy_command  = "sysctl -w net.ipv4.ip_nonlocal_bind=0 net.ipv6.ip_nonlocal_bind=0"

  ssh = { host = each.key, user = "admin", sudo = true }
}

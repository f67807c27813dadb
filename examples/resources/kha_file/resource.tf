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
    user     = "admin"
    sudo     = true
    host_key = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIKsvY0IuGzR1tYzOm0nmO0AcmTnHrCpL0Tu+ek8SVDmX"
    # Never stored in plan or state (Terraform 1.11+).
    private_key_wo = file(pathexpand("~/.ssh/id_ed25519"))
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

# The provider for the end-to-end test's side working copies (kube-vip,
# vip-check), which run.sh copies this file into: root over SSH with the
# hosts' key, verified against their known_hosts.

terraform {
  required_providers {
    kha = {
      source = "kha/kha"
    }
  }
}

variable "ssh_private_key_file" { type = string }
variable "ssh_known_hosts_file" { type = string }

provider "kha" {
  default_ssh = {
    user        = "root"
    private_key = file(var.ssh_private_key_file)
    known_hosts = file(var.ssh_known_hosts_file)
  }
}

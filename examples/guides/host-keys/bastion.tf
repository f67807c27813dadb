provider "kha" {
  default_ssh = {
    user         = "admin"
    sudo         = true
    bastion_host = "203.0.113.10" # the jump host, reachable from where Terraform runs
    # One known_hosts for both: lines for 10.0.0.21-23, collected on the
    # bastion, and a line for the bastion's own address, 203.0.113.10.
    known_hosts = file("${path.module}/known_hosts")
    private_key = file(pathexpand("~/.ssh/id_ed25519"))
  }
}

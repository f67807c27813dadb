terraform {
  required_providers {
    kha = {
      source  = "kha/kha"
      version = "~> 0.1"
    }
  }
}

# Settings every resource's `ssh` inherits. Provider configuration is never
# written to state, so the private key set here stays out of it and is
# available for refresh, import and destroy.
provider "kha" {
  default_ssh = {
    user        = "admin"
    sudo        = true
    private_key = file(pathexpand("~/.ssh/id_ed25519"))
    known_hosts = file("${path.module}/known_hosts")
  }
}

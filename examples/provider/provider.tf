terraform {
  required_providers {
    kha = {
      source  = "kha/kha"
      version = "~> 0.2"
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

  # Roll every change out gradually: one host first, alone; then 10 hosts
  # at a time; after a failure no further host of that kind of resource is
  # touched. The node-local load balancers go 25 at a time.
  rollout = {
    canary          = 1
    batch           = 10
    stop_on_failure = true
    groups = {
      kha_haproxy_config = { batch = 25 }
    }
  }
}

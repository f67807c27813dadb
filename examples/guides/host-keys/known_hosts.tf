provider "kha" {
  default_ssh = {
    user        = "admin"
    sudo        = true
    known_hosts = file("${path.module}/known_hosts") # ssh-keyscan output, as it is
    # private_key here is never stored in state (provider configuration is not).
    private_key = file(pathexpand("~/.ssh/id_ed25519"))
  }
}

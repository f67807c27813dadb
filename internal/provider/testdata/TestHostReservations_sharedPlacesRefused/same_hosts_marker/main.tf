# Two blocks with the default marker in one hosts file.
resource "kha_hosts_entries" "api" {
  entries = ["10.0.0.100 api.k8s.example.com"]
  ssh     = { host = "192.0.2.21", host_key = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGtoYS1wcm9iZS1rZXktb2Ytbm8taG9zdC1hdC1hbGwh", agent = true }
}

resource "kha_hosts_entries" "registry" {
  entries = ["10.0.0.50 registry.example.com"]
  ssh     = { host = "192.0.2.21", host_key = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGtoYS1wcm9iZS1rZXktb2Ytbm8taG9zdC1hdC1hbGwh", agent = true }
}

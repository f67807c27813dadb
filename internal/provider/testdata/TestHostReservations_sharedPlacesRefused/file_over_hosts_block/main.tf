# A whole file and a block in it.
resource "kha_hosts_entries" "api" {
  entries = ["10.0.0.100 api.k8s.example.com"]
  marker  = "api"
  ssh     = { host = "192.0.2.21", host_key = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGtoYS1wcm9iZS1rZXktb2Ytbm8taG9zdC1hdC1hbGwh", agent = true }
}

resource "kha_file" "hosts" {
  path    = "/etc/hosts"
  content = "127.0.0.1 localhost\n"
  ssh     = { host = "192.0.2.21", host_key = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGtoYS1wcm9iZS1rZXktb2Ytbm8taG9zdC1hdC1hbGwh", agent = true }
}

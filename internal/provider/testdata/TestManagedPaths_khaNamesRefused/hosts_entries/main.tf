variable "path" {
  type = string
}

resource "kha_hosts_entries" "x" {
  entries = ["10.0.0.100 api.k8s.example.com"]
  path    = var.path
  ssh     = { host = "192.0.2.1", host_key = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGtoYS1wcm9iZS1rZXktb2Ytbm8taG9zdC1hdC1hbGwh", agent = true }
}

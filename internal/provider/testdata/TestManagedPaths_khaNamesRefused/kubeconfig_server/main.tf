variable "path" {
  type = string
}

resource "kha_kubeconfig_server" "x" {
  paths  = ["/etc/kubernetes/kubelet.conf", var.path]
  server = "https://10.0.0.100:6443"
  ssh    = { host = "192.0.2.1", host_key = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGtoYS1wcm9iZS1rZXktb2Ytbm8taG9zdC1hdC1hbGwh", agent = true }
}

# kha_kubeconfig_server edits a kubeconfig that a kha_file writes whole.
resource "kha_kubeconfig_server" "node" {
  paths  = ["/etc/kubernetes/admin.conf", "/etc/kubernetes/kubelet.conf"]
  server = "https://127.0.0.1:6443"
  ssh    = { host = "192.0.2.21", host_key = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGtoYS1wcm9iZS1rZXktb2Ytbm8taG9zdC1hdC1hbGwh", agent = true }
}

resource "kha_file" "kubelet" {
  path    = "/etc/kubernetes/kubelet.conf"
  content = "apiVersion: v1\nkind: Config\n"
  ssh     = { host = "192.0.2.21", host_key = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGtoYS1wcm9iZS1rZXktb2Ytbm8taG9zdC1hdC1hbGwh", agent = true }
}

# Stacked etcd on the three control-plane nodes; kube-apiserver gets every
# member (kubespray's default), and the certificates get the computed SANs.
resource "kha_etcd_access" "etcd" {
  members = [
    { name = "etcd1", ip = "10.0.0.11" },
    { name = "etcd2", ip = "10.0.0.12" },
    { name = "etcd3", ip = "10.0.0.13" },
  ]
}

# Worker nodes whose CNI takes a single endpoint: a local TCP proxy on
# 127.0.0.1:2379 to every member, kept in place over SSH.
resource "kha_etcd_access" "worker_proxy" {
  members        = kha_etcd_access.etcd.members
  mode           = "local_proxy"
  reload_command = "systemctl reload-or-restart haproxy@etcd"

  ssh = { host = "10.0.0.21", user = "admin", sudo = true }
}

output "etcd_servers" {
  value = kha_etcd_access.etcd.etcd_servers # "https://10.0.0.11:2379,https://10.0.0.12:2379,https://10.0.0.13:2379"
}

output "etcd_cert_sans" {
  value = kha_etcd_access.etcd.cert_sans
}

resource "kha_cluster_endpoints" "cluster" {
  control_plane_nodes = [
    { name = "cp1", ip = "10.0.0.11" },
    { name = "cp2", ip = "10.0.0.12" },
    { name = "cp3", ip = "10.0.0.13" },
  ]
  worker_nodes = [{ name = "w1", ip = "10.0.0.21" }]

  local_lb    = { enabled = true, type = "haproxy" }
  external_lb = { address = "10.0.0.100", port = 8443, domain_name = "k8s.example.com" }
}

# The cluster's own copies of its endpoint, through the apiserver of the first
# control-plane node (with that node's /etc/kubernetes/admin.conf): kubeadm-config
# for the next `kubeadm join --control-plane`, cluster-info for the next
# `kubeadm join`, and kube-proxy's kubeconfig, whose pods then restart.
resource "kha_endpoint_configmaps" "cluster" {
  ssh = { host = "10.0.0.11" }

  control_plane_endpoint = kha_cluster_endpoints.cluster.kubeadm_control_plane_endpoint
  cert_sans = concat(
    kha_cluster_endpoints.cluster.apiserver_cert_sans.dns_names,
    kha_cluster_endpoints.cluster.apiserver_cert_sans.ip_addresses,
  )
  kube_proxy_server  = kha_cluster_endpoints.cluster.kube_proxy_server
  restart_kube_proxy = true
}
